package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

@RelayDatabaseTest
class HealthTest {
  @Test
  void upWithQueueDetailsThenDownWhenTheDatabaseIsUnreachable(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('a', 'order_received', '{}')");
    viaProxy(
        db,
        (proxy, health) -> {
          Health up = health.health(true);
          assertThat(up.getStatus()).isEqualTo(Status.UP);
          assertThat(up.getDetails())
              .containsEntry("schema", db.schema())
              .containsKey("schemaVersion")
              .containsKey("kinds");
          assertThat(up.getDetails().get("kinds").toString()).contains("order_received");

          proxy.close(); // refuses new connections and breaks the open ones

          await()
              .atMost(Duration.ofSeconds(60))
              .untilAsserted(
                  () -> assertThat(health.health(true).getStatus()).isEqualTo(Status.DOWN));
        });
  }

  /**
   * A worker-only database user may run work but not read the queue details: the application is UP,
   * and the details say which role reads them, instead of DOWN with a permission error.
   */
  @Test
  void aWorkerOnlyUserIsUpAndTheDetailsNameTheRoleTheyNeed(TestDatabase db) throws Exception {
    java.util.List<String> roles =
        dev.relay.Migrator.forSchema(db.schema()).grantRoles(db.dataSource());
    String user = db.schema() + "_w_login";
    db.execute("CREATE ROLE " + user + " LOGIN PASSWORD 'w' IN ROLE " + db.schema() + "_worker");
    try (HikariDataSource worker = new HikariDataSource()) {
      worker.setJdbcUrl(db.jdbcUrl().replaceFirst("user=[^&]*", "user=" + user + "&password=w"));
      worker.setMaximumPoolSize(2);
      RelayHealthIndicator health =
          new RelayHealthIndicator(
              worker, db.schema(), null, Duration.ofSeconds(30), Duration.ofSeconds(10));
      try {
        Health h = health.health(true);
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails().get("kinds").toString())
            .contains("permission denied")
            .contains(db.schema() + "_operator");
      } finally {
        health.close();
      }
    } finally {
      db.execute("DROP OWNED BY " + user + "; DROP ROLE " + user);
      for (String role : roles) {
        db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
      }
    }
  }

  /** Cuts the proxy's connections and refuses new ones, or stalls them as a partition would. */
  enum Fault {
    CUT,
    STALL
  }

  @ParameterizedTest
  @EnumSource(Fault.class)
  void downWithinAFewSecondsWhenTheDatabaseIsUnreachableNotAfterThePoolTimeout(
      Fault fault, TestDatabase db) throws Exception {
    viaProxy(
        db,
        (proxy, health) -> {
          assertThat(health.health(true).getStatus()).isEqualTo(Status.UP);

          if (fault == Fault.CUT) {
            proxy.close();
          } else {
            proxy.stall(true);
          }

          // Every probe answers, DOWN, well before the pool's 10 s connection timeout.
          for (int probe = 1; probe <= 3; probe++) {
            long started = System.nanoTime();
            Health down = health.health(true);
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            assertThat(down.getStatus()).as("probe %d", probe).isEqualTo(Status.DOWN);
            assertThat(took).as("probe %d took", probe).isLessThan(Duration.ofSeconds(5));
          }
        });
  }

  /** What a test does with the proxy in front of the database and the relay health contributor. */
  interface ProxiedHealth {
    void accept(LoopbackProxy proxy, HealthIndicator health) throws Exception;
  }

  /**
   * Runs {@code body} in a context whose application DataSource reaches the database via a proxy.
   */
  private static void viaProxy(TestDatabase db, ProxiedHealth body) throws Exception {
    LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
    try (HikariDataSource application = new HikariDataSource()) {
      application.setJdbcUrl(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      application.setMaximumPoolSize(2);
      Contexts.bare()
          .withBean("dataSource", DataSource.class, () -> application)
          .withPropertyValues("relay.schema=" + db.schema())
          .run(
              context ->
                  body.accept(
                      proxy, context.getBean("relayHealthIndicator", HealthIndicator.class)));
    } finally {
      proxy.close();
    }
  }
}
