package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.RetryableException;
import dev.relay.TransactionRequiredException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class InboxTest {
  private static final String ACK =
      "{\"order_id\":103,\"total\":29.00,\"message\":\"Order received\"}";

  private TestDatabase db;
  private Inbox inbox;
  private final AtomicInteger effects = new AtomicInteger();

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    this.db = db;
    this.inbox = Inbox.builder().schema(db.schema()).build();
    db.execute("CREATE TABLE {schema}.mail (message_id text PRIMARY KEY, body jsonb NOT NULL)");
  }

  /** The mailer's effect: one row per sent mail, on the inbox's connection. */
  private InboxEffect sendMail(String messageId, String payload) {
    return tx -> {
      effects.incrementAndGet();
      try (PreparedStatement ps =
          tx.prepareStatement("INSERT INTO " + db.schema() + ".mail VALUES (?, ?::jsonb)")) {
        ps.setString(1, messageId);
        ps.setString(2, payload);
        ps.executeUpdate();
      }
      return "{\"mail_ref\":\"m-" + messageId + "\"}";
    };
  }

  private InboxResult deliver(DataSource ds, String id, String payload) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        InboxResult r = inbox.process(c, "mailer", id, payload, sendMail(id, payload));
        c.commit();
        return r;
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  private long mails() throws SQLException {
    return db.queryLong("SELECT count(*) FROM {schema}.mail");
  }

  @Nested
  class Repeats {
    @Test
    void firstDeliveryRunsTheEffectAndARepeatReturnsTheSavedResult() throws SQLException {
      InboxResult first = deliver(db.dataSource(), "order-103-ack", ACK);
      InboxResult again = deliver(db.dataSource(), "order-103-ack", ACK);

      assertThat(first.status()).isEqualTo(InboxResult.Status.APPLIED);
      assertThat(again.status()).isEqualTo(InboxResult.Status.DUPLICATE);
      assertThat(again.result()).isEqualTo("{\"mail_ref\": \"m-order-103-ack\"}");
      assertThat(again.firstReceivedAt()).isEqualTo(first.firstReceivedAt());
      assertThat(effects).hasValue(1);
      assertThat(mails()).isEqualTo(1);
    }

    @Test
    void keyReorderedJsonIsTheSameAndAChangedTotalIsRefused() throws SQLException {
      deliver(db.dataSource(), "order-103-ack", ACK);

      InboxResult reordered =
          deliver(
              db.dataSource(),
              "order-103-ack",
              "{ \"message\": \"Order received\", \"total\": 29.0, \"order_id\": 103 }");
      assertThat(reordered.duplicate()).isTrue();

      String changed = ACK.replace("29.00", "31.00");
      assertThatThrownBy(() -> deliver(db.dataSource(), "order-103-ack", changed))
          .isInstanceOfSatisfying(
              PayloadMismatchException.class,
              e -> {
                assertThat(e.messageId()).isEqualTo("order-103-ack");
                assertThat(e.consumer()).isEqualTo("mailer");
                assertThat(e.storedPayloadDigest())
                    .hasSize(64)
                    .isNotEqualTo(e.requestedPayloadDigest());
                assertThat(e.getMessage())
                    .contains(e.storedPayloadDigest(), e.requestedPayloadDigest());
              });
      assertThat(effects).hasValue(1);
      assertThat(db.queryString("SELECT payload->>'total' FROM {schema}.inbox")).isEqualTo("29.00");
    }

    @Test
    void consumersAreSeparate() throws SQLException {
      deliver(db.dataSource(), "order-103-ack", ACK);
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        InboxResult r = inbox.process(c, "ledger", "order-103-ack", ACK, tx -> "{\"booked\":true}");
        c.commit();
        assertThat(r.applied()).isTrue();
      }
    }

    @Test
    void aResultWithANulIsStoredCleanedAndReadBackByTheRepeat() throws SQLException {
      // jsonb refuses the escape for NUL (as from an effect that echoes a binary response body)
      String withNul = "{\"body\":\"bad\\u0000text\"}";
      InboxResult first;
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        first = inbox.process(c, "mailer", "nul-1", ACK, tx -> withNul);
        c.commit();
      }
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        InboxResult again = inbox.process(c, "mailer", "nul-1", ACK, tx -> "{}");
        c.commit();
        assertThat(first.applied()).isTrue();
        assertThat(first.result()).isEqualTo("{\"body\":\"bad\\ufffdtext\"}");
        assertThat(again.duplicate()).isTrue();
        assertThat(again.result()).isEqualTo("{\"body\": \"bad\ufffdtext\"}");
      }
    }
  }

  @Nested
  class Failures {
    @Test
    void aFailingEffectRollsBackItsRecordAndALaterRepeatRuns() throws SQLException {
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(
                () ->
                    inbox.process(
                        c,
                        "mailer",
                        "order-103-ack",
                        ACK,
                        tx -> {
                          sendMail("order-103-ack", ACK).apply(tx);
                          throw new java.io.IOException("SMTP relay refused the connection");
                        }))
            .isInstanceOf(EffectFailedException.class)
            .hasMessageContaining("order-103-ack");
        c.rollback(); // the caller's duty, as documented
        c.setAutoCommit(true);
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isZero();
      assertThat(mails()).isZero();

      InboxResult later = deliver(db.dataSource(), "order-103-ack", ACK);
      assertThat(later.applied()).isTrue();
      assertThat(mails()).isEqualTo(1);
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsSent() throws SQLException {
      try (Connection c = db.connection()) {
        assertThatThrownBy(() -> inbox.process(c, "mailer", "m-1", ACK, tx -> "{}"))
            .isInstanceOf(TransactionRequiredException.class);
        c.setAutoCommit(false);
        assertThatThrownBy(() -> inbox.process(c, "mailer", "", ACK, tx -> "{}"))
            .isInstanceOfSatisfying(
                InvalidReceiverInputException.class,
                e -> assertThat(e.field()).isEqualTo("messageId"));
        assertThatThrownBy(() -> inbox.process(c, "mail er", "m-1", ACK, tx -> "{}"))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("consumer");
        assertThatThrownBy(() -> inbox.process(c, "mailer", "m-1", "{\"a\":", tx -> "{}"))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("payload");
        assertThatThrownBy(() -> inbox.process(c, "mailer", "m-1", ACK, tx -> "not json"))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("effect result");
        c.rollback();
        c.setAutoCommit(true);
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isZero();
    }
  }

  @Nested
  class Concurrency {
    @Test
    void sixteenThreadsDeliveringOneMessageRunTheEffectOnceAndAllGetItsResult() throws Exception {
      int threads = 16;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch start = new CountDownLatch(1);
      try {
        List<Future<InboxResult>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          futures.add(
              pool.submit(
                  () -> {
                    start.await();
                    return deliver(db.dataSource(), "order-103-ack", ACK);
                  }));
        }
        start.countDown();
        List<InboxResult> results = new ArrayList<>();
        for (Future<InboxResult> f : futures) {
          results.add(f.get(2, TimeUnit.MINUTES));
        }
        assertThat(effects).hasValue(1);
        assertThat(mails()).isEqualTo(1);
        assertThat(results).filteredOn(InboxResult::applied).hasSize(1);
        assertThat(results)
            .extracting(r -> r.result().replace(" ", ""))
            .containsOnly("{\"mail_ref\":\"m-order-103-ack\"}");
      } finally {
        pool.shutdownNow();
      }
    }

    @Test
    void aConcurrentRepeatRunsTheEffectWhenTheFirstRollsBack() throws Exception {
      ExecutorService pool = Executors.newSingleThreadExecutor();
      try (Connection first = db.connection()) {
        first.setAutoCommit(false);
        inbox.process(first, "mailer", "order-103-ack", ACK, sendMail("order-103-ack", ACK));
        Future<InboxResult> second =
            pool.submit(() -> deliver(db.dataSource(), "order-103-ack", ACK));
        // The second waits on the first's lock; in-progress is visible to a non-waiting probe.
        try (Connection probe = db.connection()) {
          probe.setAutoCommit(false);
          assertThat(inbox.tryProcess(probe, "mailer", "order-103-ack", ACK, tx -> "{}").status())
              .isEqualTo(InboxResult.Status.IN_PROGRESS);
          probe.rollback();
          probe.setAutoCommit(true);
        }
        first.rollback();
        first.setAutoCommit(true);
        assertThat(second.get(1, TimeUnit.MINUTES).applied()).isTrue();
      } finally {
        pool.shutdownNow();
      }
      assertThat(effects).hasValue(2);
      assertThat(mails()).isEqualTo(1);
    }
  }

  @Nested
  class Isolation {
    @Test
    void underRepeatableReadARepeatCommittedAfterTheSnapshotIsRetryable() throws SQLException {
      try (Connection late = db.connection()) {
        late.setAutoCommit(false);
        late.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (var s = late.createStatement()) {
          s.execute("SELECT 1"); // takes the transaction's snapshot
        }
        deliver(db.dataSource(), "order-103-ack", ACK);
        assertThatThrownBy(
                () ->
                    inbox.process(
                        late, "mailer", "order-103-ack", ACK, sendMail("order-103-ack", ACK)))
            .isInstanceOfSatisfying(
                RetryableException.class, e -> assertThat(e.sqlState()).isEqualTo("40001"));
        late.rollback();
        late.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        late.setAutoCommit(true);
      }
      assertThat(effects).hasValue(1);
      // Repeated from its start, the transaction sees the first delivery and gets its result.
      assertThat(deliver(db.dataSource(), "order-103-ack", ACK).duplicate()).isTrue();
    }
  }

  @Nested
  class Retention {
    @Test
    void purgeDeletesOnlyRecordsOlderThanTheConsumersHorizon() throws SQLException {
      deliver(db.dataSource(), "old-1", ACK);
      deliver(db.dataSource(), "old-2", ACK);
      deliver(db.dataSource(), "fresh", ACK);
      db.execute(
          "UPDATE {schema}.inbox SET received_at = clock_timestamp() - interval '8 days'"
              + " WHERE message_id LIKE 'old-%'");
      db.execute(
          "UPDATE {schema}.inbox SET received_at = clock_timestamp() - interval '6 days'"
              + " WHERE message_id = 'fresh'");
      try (Connection c = db.connection()) {
        assertThat(inbox.purge(c, "mailer", 100)).as("no horizon: never purged").isZero();

        inbox.setHorizon(c, "mailer", Duration.ofDays(7));
        assertThat(inbox.horizon(c, "mailer")).contains(Duration.ofDays(7));
        assertThat(inbox.horizons(c)).containsEntry("mailer", Duration.ofDays(7));
        assertThat(db.queryString("SELECT horizon::text FROM {schema}.inbox_consumer"))
            .isEqualTo("7 days");

        assertThat(inbox.purge(c, "mailer", 1)).isEqualTo(1);
        assertThat(inbox.purge(c, "mailer", 100)).isEqualTo(1);
        assertThat(inbox.purge(c, "mailer", 100)).isZero();
        assertThatThrownBy(() -> inbox.setHorizon(c, "mailer", Duration.ZERO))
            .isInstanceOf(InvalidReceiverInputException.class);
      }
      assertThat(db.queryString("SELECT string_agg(message_id, ',') FROM {schema}.inbox"))
          .isEqualTo("fresh");
      // After the purge the ID is forgotten: a redrive runs the effect again (here the mailer's
      // own table happens to catch it; a real mail would go out twice).
      assertThatThrownBy(() -> deliver(db.dataSource(), "old-1", ACK))
          .isInstanceOf(EffectFailedException.class)
          .hasMessageContaining("mail_pkey");
      assertThat(effects).hasValue(4);
    }
  }
}
