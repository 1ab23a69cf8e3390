package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.HeldClaim;
import dev.relay.ManualClaims;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.test.EmbeddedServer;
import dev.relay.test.LoopbackProxy;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.EnqueuedWork;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;

/** The code of docs/testing.md. */
final class TestingSnippets {
  private TestingSnippets() {}

  static void proxy(TestDatabase db) throws Exception {
    // docs:begin testing-proxy
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        Connection connection =
            DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
      connection.setAutoCommit(false);
      // ... write rows ...
      proxy.dropReplyAfterNextCommit();
      assertThatThrownBy(connection::commit).isInstanceOf(SQLException.class); // SQLState 08006
      assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
      // the transaction did commit: a direct connection (db.connection()) sees the rows
    }
    // docs:end
  }

  static void enqueued(TestDatabase db, Outbox outbox) throws Exception {
    // docs:begin testing-enqueued
    EnqueuedWork enqueued = EnqueuedWork.in(db.schema());
    try (Connection tx = db.connection()) {
      tx.setAutoCommit(false);
      outbox.enqueue(tx, Work.of("order-103-ack", "order_received", "{\"order\": 103}"));

      EnqueuedWork.Row ack = enqueued.requireEnqueued(tx, "order_received"); // exactly one
      assertThat(ack.payload()).isEqualTo("{\"order\": 103}");
      assertThat(ack.state()).isEqualTo("ready");

      tx.rollback();
      enqueued.requireNotEnqueued(tx, "order_received");  // rolled back with the transaction
    }
    // docs:end
  }

  static void manualClaims(DataSource dataSource) throws Exception {
    // docs:begin testing-manual-claims
    ManualClaims claims = ManualClaims.forSchema("relay");
    try (Connection c = dataSource.getConnection()) {       // auto-commit: each call commits
      Optional<HeldClaim> next =
          claims.claimNext(c, "tool-1", "default", "order_received", Duration.ofSeconds(30));
      if (next.isPresent()) {
        HeldClaim held = next.get();
        claims.renew(c, held, Duration.ofSeconds(30));     // a heartbeat, guarded
        ManualClaims.Write w = claims.settle(c, held, Outcome.done("email-1"));
        if (w.stale()) {
          // another generation owns the work now; nothing was recorded but the refusal
        }
      }
    }
    // docs:end
  }

  static void launcher() throws Exception {
    // docs:begin testing-embedded-server
    try (EmbeddedServer pg = EmbeddedServer.builder()
        .dataDirectory(Path.of("target/pgdata"))          // kept: the data outlives the process
        .serverConfig("max_connections", "200")
        .stopOnExit(true)                                  // also stopped if the JVM is terminated
        .start()) {
      DataSource dataSource = pg.dataSource();             // fsync and synchronous_commit on
      // ... migrate, run, inspect with psql on pg.port() ...
    }
    // docs:end
  }
}
