package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.PgBouncer;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter behind PgBouncer: the application's DataSource (and so Relay's own pool) goes through
 * the pooler; {@code relay.direct-connection.url} gives the LISTEN connection and the maintenance
 * lock a session of their own.
 */
@RelayDatabaseTest
class BehindPgBouncerStarterTest {

  @Test
  void theSessionConnectionsGoDirectAndEverythingElseThroughPgBouncer(TestDatabase db)
      throws Exception {
    try (PgBouncer bouncer = PgBouncer.inFrontOf(db)) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(bouncer.jdbcUrl(db));
      config.setMaximumPoolSize(4);
      try (HikariDataSource application = new HikariDataSource(config)) {
        Contexts.bare()
            .withBean("dataSource", DataSource.class, () -> application)
            .withUserConfiguration(Contexts.Jdbc.class, Contexts.OneHandler.class)
            .withPropertyValues(
                "relay.schema=" + db.schema(),
                "relay.poll-interval=5m", // only a notification can wake the worker in time
                "relay.shutdown-grace=2s",
                "relay.direct-connection.url=" + db.jdbcUrl(),
                "spring.lifecycle.timeout-per-shutdown-phase=10s")
            .run(
                context -> {
                  assertThat(context).hasNotFailed();
                  RelayConnections connections = context.getBean(RelayConnections.class);
                  try (Connection listen = connections.listenConnections().open();
                      Connection pooled = connections.dataSource().getConnection()) {
                    assertThat(ownSession(listen)).as("the LISTEN connection").isTrue();
                    assertThat(ownSession(pooled)).as("the runtime's pool").isFalse();
                  }
                  TransactionTemplate tx =
                      new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
                  RelayOutbox outbox = context.getBean(RelayOutbox.class);
                  tx.executeWithoutResult(
                      s ->
                          outbox.enqueue(
                              "order-103-ack", "order_received", Map.of("order_id", 103)));
                  await()
                      .atMost(Duration.ofSeconds(60))
                      .until(
                          () ->
                              "done"
                                  .equals(
                                      db.queryString(
                                          "SELECT state FROM {schema}.work"
                                              + " WHERE work_id = 'order-103-ack'")));
                });
      }
    }
  }

  /** Whether the server process that answers is the one the connection announced. */
  private static boolean ownSession(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
      r.next();
      return r.getInt(1) == c.unwrap(PGConnection.class).getBackendPID();
    }
  }
}
