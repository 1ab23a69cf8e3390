package dev.relay.transport.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.InvalidConfigurationException;
import dev.relay.TransactionRequiredException;
import dev.relay.receiver.InvalidReceiverInputException;
import dev.relay.receiver.PayloadMismatchException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The consumer side: each message applied once, in the consumer's transaction, fenced. */
@RelayDatabaseTest
class BrokerInboxTest {
  private BrokerInbox inbox;
  private static String schema;

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE {schema}.ledger (work_id text, amount int)");
    schema = db.schema();
    inbox = BrokerInbox.builder(db.dataSource()).consumer("billing").schema(db.schema()).build();
  }

  private static Map<String, String> headers(String workId) {
    return new HashMap<>(Map.of(BrokerHeaders.WORK_ID, workId));
  }

  private static BrokerEffect ledger(int amount) {
    return (tx, d) -> {
      try (PreparedStatement ps =
          tx.prepareStatement(
              "INSERT INTO " + schema + ".ledger (work_id, amount) VALUES (?, ?)")) {
        ps.setString(1, d.workId());
        ps.setInt(2, amount);
        ps.executeUpdate();
      }
    };
  }

  private static long ledgerRows(TestDatabase db) throws Exception {
    return db.queryLong("SELECT count(*) FROM {schema}.ledger");
  }

  @Nested
  class OwnTransaction {
    @Test
    void aRedeliveredMessageAppliesOnce(TestDatabase db) throws Exception {
      Map<String, String> h = headers("w-1");

      BrokerInbox.Result first = inbox.apply(h::get, "{\"a\":1}", ledger(5));
      BrokerInbox.Result again = inbox.apply(h::get, "{\"a\": 1}", ledger(5));

      assertThat(first.status()).isEqualTo(BrokerInbox.Status.APPLIED);
      assertThat(again.status()).isEqualTo(BrokerInbox.Status.DUPLICATE);
      assertThat(ledgerRows(db)).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'billing'"))
          .isEqualTo(1);
    }

    @Test
    void aFailedEffectRecordsNothingSoTheRedeliveryApplies(TestDatabase db) throws Exception {
      Map<String, String> h = headers("w-1");
      BrokerEffect failing =
          (tx, d) -> {
            ledger(1).apply(tx, d);
            throw new IllegalStateException("downstream refused");
          };

      assertThatThrownBy(() -> inbox.apply(h::get, "{}", failing))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("downstream refused");
      assertThat(ledgerRows(db)).isZero();

      assertThat(inbox.apply(h::get, "{}", ledger(2)).status())
          .isEqualTo(BrokerInbox.Status.APPLIED);
      assertThat(db.queryLong("SELECT sum(amount) FROM {schema}.ledger")).isEqualTo(2);
    }

    @Test
    void aLowerFencingTokenIsStaleAndWritesNothing(TestDatabase db) throws Exception {
      Map<String, String> newer = headers("w-2");
      newer.put(BrokerHeaders.FENCING_RESOURCE, "mailbox-1");
      newer.put(BrokerHeaders.FENCING_TOKEN, "7");
      Map<String, String> older = headers("w-1");
      older.put(BrokerHeaders.FENCING_RESOURCE, "mailbox-1");
      older.put(BrokerHeaders.FENCING_TOKEN, "6");

      BrokerInbox.Result applied = inbox.apply(newer::get, "{}", ledger(7));
      BrokerInbox.Result stale = inbox.apply(older::get, "{}", ledger(6));

      assertThat(applied.status()).isEqualTo(BrokerInbox.Status.APPLIED);
      assertThat(applied.fence().accepted()).isTrue();
      assertThat(stale.status()).isEqualTo(BrokerInbox.Status.STALE);
      assertThat(stale.fence().highestToken()).isEqualTo(7);
      assertThat(db.queryLong("SELECT sum(amount) FROM {schema}.ledger")).isEqualTo(7);
      // The stale message left no inbox record: its repeat is refused by the fence again.
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE message_id = 'w-1'"))
          .isZero();
      assertThat(inbox.apply(older::get, "{}", ledger(6)).status())
          .isEqualTo(BrokerInbox.Status.STALE);
    }

    @Test
    void aChangedPayloadUnderAUsedWorkIdIsPoison(TestDatabase db) throws Exception {
      Map<String, String> h = headers("w-1");
      inbox.apply(h::get, "{\"a\":1}", ledger(1));

      assertThatThrownBy(() -> inbox.apply(h::get, "{\"a\":2}", ledger(1)))
          .isInstanceOf(PayloadMismatchException.class)
          .satisfies(e -> assertThat(BrokerInbox.isPoison((RuntimeException) e)).isTrue());
      assertThat(ledgerRows(db)).isEqualTo(1);
    }

    @Test
    void badHeadersOrPayloadAreRefusedByNameAndChangeNothing(TestDatabase db) throws Exception {
      assertThatThrownBy(() -> inbox.apply(Map.<String, String>of()::get, "{}", ledger(1)))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining(BrokerHeaders.WORK_ID);
      Map<String, String> h = headers("w-1");
      assertThatThrownBy(() -> inbox.apply(h::get, "not json", ledger(1)))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining("payload");
      assertThat(ledgerRows(db)).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isZero();
    }
  }

  @Nested
  class CallersTransaction {
    @Test
    void theMessageCommitsAndRollsBackWithTheCallersWrites(TestDatabase db) throws Exception {
      BrokerDelivery d = BrokerDelivery.read(headers("w-1")::get, "{}");
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThat(inbox.applyIn(c, d, ledger(1)).status()).isEqualTo(BrokerInbox.Status.APPLIED);
        c.rollback();
      }
      assertThat(ledgerRows(db)).isZero();

      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThat(inbox.applyIn(c, d, ledger(1)).status()).isEqualTo(BrokerInbox.Status.APPLIED);
        assertThat(inbox.applyIn(c, d, ledger(1)).status()).isEqualTo(BrokerInbox.Status.DUPLICATE);
        c.commit();
      }
      assertThat(ledgerRows(db)).isEqualTo(1);
    }

    @Test
    void aFailedMessageIsUndoneToItsSavepointAndTheRestOfTheTransactionStays(TestDatabase db)
        throws Exception {
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        inbox.applyIn(c, BrokerDelivery.read(headers("w-1")::get, "{}"), ledger(1));
        BrokerEffect broken =
            (tx, d) -> {
              try (PreparedStatement ps = tx.prepareStatement("SELECT 1/0")) {
                ps.execute();
              }
            };
        assertThatThrownBy(
                () -> inbox.applyIn(c, BrokerDelivery.read(headers("w-2")::get, "{}"), broken))
            .isInstanceOf(RuntimeException.class);
        inbox.applyIn(c, BrokerDelivery.read(headers("w-3")::get, "{}"), ledger(3));
        c.commit();
      }
      assertThat(
              db.queryString(
                  "SELECT string_agg(work_id, ',' ORDER BY work_id) FROM {schema}.ledger"))
          .isEqualTo("w-1,w-3");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isEqualTo(2);
    }

    @Test
    void anAutoCommitConnectionIsRefused(TestDatabase db) throws Exception {
      try (Connection c = db.connection()) {
        assertThatThrownBy(
                () -> inbox.applyIn(c, BrokerDelivery.read(headers("w-1")::get, "{}"), ledger(1)))
            .isInstanceOf(TransactionRequiredException.class);
      }
      assertThat(ledgerRows(db)).isZero();
    }
  }

  @Test
  void aConsumerNameOutsideTheAllowedSetIsRefusedAtBuild(TestDatabase db) {
    assertThatThrownBy(() -> BrokerInbox.builder(db.dataSource()).consumer("bad name").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("consumer");
  }
}
