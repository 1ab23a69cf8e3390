package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.TransactionRequiredException;
import dev.relay.receiver.KeyedHistory.Status;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class OrderedReceiversTest {
  private TestDatabase db;

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
  }

  private KeyedHistory.Decision offer(KeyedHistory h, long sequence, Long previous, boolean commit)
      throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      KeyedHistory.Decision d = h.offer(c, "ledger", "order-103", sequence, previous);
      if (commit) {
        c.commit();
      } else {
        c.rollback();
      }
      return d;
    }
  }

  @Nested
  class StrictHistory {
    @Test
    void holdsAnItemUntilThePreviousDeliveredSequenceHasArrived() throws SQLException {
      KeyedHistory h = KeyedHistory.forSchema(db.schema());

      assertThat(offer(h, 1, null, true).status()).isEqualTo(Status.APPLY);
      KeyedHistory.Decision early = offer(h, 3, 2L, true);
      assertThat(early.status()).isEqualTo(Status.HOLD);
      assertThat(early.lastApplied()).isEqualTo(1);
      assertThat(offer(h, 2, 1L, true).status()).isEqualTo(Status.APPLY);
      assertThat(offer(h, 3, 2L, true).status()).isEqualTo(Status.APPLY);
      assertThat(offer(h, 2, 1L, true).status()).isEqualTo(Status.ALREADY_APPLIED);
    }

    @Test
    void cancelledItemIsADeliberateGapNotAWait() throws SQLException {
      KeyedHistory h = KeyedHistory.forSchema(db.schema());
      offer(h, 1, null, true);

      // Sequence 2 was cancelled at the sender: 3 names 1 as its previous delivered sequence.
      assertThat(offer(h, 3, 1L, true).status()).isEqualTo(Status.APPLY);
    }

    @Test
    void rolledBackApplyLeavesThePositionWhereItWas() throws SQLException {
      KeyedHistory h = KeyedHistory.forSchema(db.schema());
      offer(h, 1, null, true);

      assertThat(offer(h, 2, 1L, false).status()).isEqualTo(Status.APPLY); // effect failed
      assertThat(offer(h, 2, 1L, true).status()).isEqualTo(Status.APPLY); // and runs again
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsSent() throws SQLException {
      KeyedHistory h = KeyedHistory.forSchema(db.schema());
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(() -> h.offer(c, "ledger", "k", 0, null))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("sequence");
        assertThatThrownBy(() -> h.offer(c, "ledger", "k", 3, 3L))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("previousDeliveredSequence");
        assertThatThrownBy(() -> h.offer(c, "", "k", 1, null))
            .isInstanceOf(InvalidReceiverInputException.class)
            .hasMessageContaining("consumer");
        // Nothing was sent: the transaction is still usable.
        assertThat(h.offer(c, "ledger", "k", 1, null).status()).isEqualTo(Status.APPLY);
        c.rollback();
      }
      try (Connection c = db.connection()) {
        assertThatThrownBy(() -> h.offer(c, "ledger", "k", 1, null))
            .isInstanceOf(TransactionRequiredException.class);
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.receiver_key_position")).isZero();
    }
  }

  @Nested
  class Latest {
    @Test
    void acceptsANewerVersionAndRefusesAnOlderOne() throws SQLException {
      LatestState latest = LatestState.forSchema(db.schema());
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThat(latest.offer(c, "order-view", "order-103", 5).status())
            .isEqualTo(LatestState.Status.NEWER);
        assertThat(latest.offer(c, "order-view", "order-103", 4).status())
            .isEqualTo(LatestState.Status.OLDER);
        assertThat(latest.offer(c, "order-view", "order-103", 5).status())
            .isEqualTo(LatestState.Status.SAME);
        LatestState.Decision six = latest.offer(c, "order-view", "order-103", 6);
        assertThat(six.status()).isEqualTo(LatestState.Status.NEWER);
        assertThat(six.highest()).isEqualTo(5);
        c.commit();
      }
    }
  }
}
