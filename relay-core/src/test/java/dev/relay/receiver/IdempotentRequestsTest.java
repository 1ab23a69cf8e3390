package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class IdempotentRequestsTest {
  private static final String PURCHASE =
      "{\"customer_id\":1,\"lines\":[{\"sku\":\"P3\",\"qty\":1},{\"sku\":\"P9\",\"qty\":2}]}";

  private TestDatabase db;
  private IdempotentRequests purchases;
  private final AtomicInteger handlerRuns = new AtomicInteger();

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    this.db = db;
    this.purchases =
        IdempotentRequests.using(Inbox.builder().schema(db.schema()).build(), "purchase");
    db.execute(
        "CREATE TABLE {schema}.orders (order_id bigint GENERATED ALWAYS AS IDENTITY (START 103)"
            + " PRIMARY KEY, request jsonb NOT NULL)");
  }

  /** The shop's purchase: one order row; the response names the new order. */
  private InboxEffect placeOrder(String request) {
    return tx -> {
      handlerRuns.incrementAndGet();
      try (PreparedStatement ps =
          tx.prepareStatement(
              "INSERT INTO "
                  + db.schema()
                  + ".orders (request) VALUES (?::jsonb)"
                  + " RETURNING order_id")) {
        ps.setString(1, request);
        try (var rs = ps.executeQuery()) {
          rs.next();
          return "{\"order_id\":" + rs.getLong(1) + ",\"status\":\"pending\"}";
        }
      }
    };
  }

  @Test
  void aRetryAfterTheLostCommitReplyReturnsTheStoredResponseAndCreatesNoSecondOrder()
      throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        Connection viaProxy =
            DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
      viaProxy.setAutoCommit(false);
      InboxResult first =
          purchases.execute(viaProxy, "purchase-103", PURCHASE, placeOrder(PURCHASE));
      assertThat(first.applied()).isTrue();
      proxy.dropReplyAfterNextCommit();
      assertThatThrownBy(viaProxy::commit).isInstanceOf(SQLException.class);
      assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
    }

    // The client does not know whether order 103 exists; it retries with the same key.
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      InboxResult retry = purchases.execute(c, "purchase-103", PURCHASE, placeOrder(PURCHASE));
      c.commit();
      c.setAutoCommit(true);
      assertThat(retry.duplicate()).isTrue();
      assertThat(retry.result()).isEqualTo("{\"status\": \"pending\", \"order_id\": 103}");
    }
    assertThat(handlerRuns).hasValue(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.orders")).isEqualTo(1);
  }

  @Test
  void aRetryWithADifferentBodyIsRefused() throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      purchases.execute(c, "purchase-103", PURCHASE, placeOrder(PURCHASE));
      c.commit();
      String other = PURCHASE.replace("\"qty\":2", "\"qty\":3");
      assertThatThrownBy(() -> purchases.execute(c, "purchase-103", other, placeOrder(other)))
          .isInstanceOfSatisfying(
              PayloadMismatchException.class,
              e -> {
                assertThat(e.consumer()).isEqualTo("purchase");
                assertThat(e.messageId()).isEqualTo("purchase-103");
              });
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.orders")).isEqualTo(1);
  }
}
