package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.QueueHealth;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The starter's maintenance loop in a real application context on a real database. */
@RelayDatabaseTest
class MaintenanceAutoConfigurationTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  /** The starter as an application gets it, maintenance every second. */
  private static ApplicationContextRunner app(TestDatabase db) {
    return Contexts.on(db)
        .withConfiguration(AutoConfigurations.of(RelayMaintenanceAutoConfiguration.class))
        .withUserConfiguration(Contexts.OneHandler.class)
        .withPropertyValues("relay.maintenance.interval=1s", "relay.maintenance.work-retention=1m");
  }

  /** A worker-only database user switches the meters off (their gauges read as an operator). */
  @Test
  void metricsAreBoundUnlessSwitchedOff(TestDatabase db) {
    MeterRegistry registry = new SimpleMeterRegistry();
    app(db)
        .withBean(MeterRegistry.class, () -> registry)
        .run(context -> assertThat(context).hasSingleBean(RelayMetricsBinding.class));
    app(db)
        .withBean(MeterRegistry.class, () -> new SimpleMeterRegistry())
        .withPropertyValues("relay.metrics-enabled=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(RelayMetricsBinding.class);
            });
    app(db)
        .withPropertyValues("relay.metrics-enabled=maybe")
        .run(
            context ->
                assertThat(context)
                    .getFailure()
                    .hasStackTraceContaining("relay.metrics-enabled")
                    .hasStackTraceContaining("must be true or false"));
  }

  @Test
  void doneWorkPastItsRetentionIsPurgedAndTheDoneCountBecomesVisible(TestDatabase db)
      throws Exception {
    MeterRegistry registry = new SimpleMeterRegistry();
    app(db)
        .withBean(MeterRegistry.class, () -> registry)
        .withPropertyValues("relay.metrics-refresh-interval=1s")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              enqueue(db, "old-1", "old-2", "recent");
              await()
                  .atMost(WAIT)
                  .until(
                      () -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"),
                      n -> n == 3);
              // Two of them ended a month ago: past the retention and the kind's dedup horizon.
              // The worker's completion filed them in the history table; a month-old completion
              // lives in its day's partition, which maintenance would have created back then.
              db.execute(
                  "SELECT {schema}.add_history_day("
                      + "((clock_timestamp() - interval '30 days') AT TIME ZONE 'UTC')::date);"
                      + " UPDATE {schema}.work_history"
                      + " SET completed_at = clock_timestamp() - interval '30 days'"
                      + " WHERE work_id IN ('old-1', 'old-2')");

              await()
                  .atMost(WAIT)
                  .untilAsserted(
                      () -> {
                        assertThat(
                                db.queryString(
                                    "SELECT string_agg(work_id, ',') FROM {schema}.work"))
                            .isEqualTo("recent");
                        // every finished ID keeps the tombstone its completion wrote; the
                        // retired ones now hold their IDs alone
                        assertThat(
                                db.queryString(
                                    "SELECT string_agg(work_id, ',' ORDER BY work_id)"
                                        + " FROM {schema}.tombstone"))
                            .isEqualTo("old-1,old-2,recent");
                      });
              Admin admin = Admin.create(db.dataSource(), db.schema());
              await()
                  .atMost(WAIT)
                  .untilAsserted(
                      () -> {
                        List<QueueHealth> health = admin.health(Duration.ofMinutes(15));
                        assertThat(health)
                            .filteredOn(q -> q.kind().equals("order_received"))
                            .singleElement()
                            .extracting(QueueHealth::done)
                            .isEqualTo(1L);
                        Gauge done =
                            registry
                                .find("relay.work.depth")
                                .tags("kind", "order_received", "state", "done")
                                .gauge();
                        assertThat(done).isNotNull();
                        assertThat(done.value()).isEqualTo(1.0);
                      });
              assertThat(context.getBean(Maintenance.class).isLeader()).isTrue();
            });
  }

  @Test
  void twoApplicationsOnOneSchemaHaveOneMaintenanceLeaderAtATime(TestDatabase db) {
    app(db)
        .run(
            first ->
                app(db)
                    .run(
                        second -> {
                          Maintenance a = first.getBean(Maintenance.class);
                          Maintenance b = second.getBean(Maintenance.class);
                          await().atMost(WAIT).until(() -> a.isLeader() || b.isLeader());
                          // Both run every second; the lock keeps the other one out throughout.
                          await()
                              .during(Duration.ofSeconds(3))
                              .atMost(WAIT)
                              .until(() -> a.isLeader() != b.isLeader());

                          boolean firstLeads = a.isLeader();
                          (firstLeads ? first : second).close(); // stops its maintenance
                          Maintenance other = firstLeads ? b : a;
                          await().atMost(WAIT).until(other::isLeader);
                        }));
  }

  @Test
  void disabledMaintenanceRunsNothing(TestDatabase db) {
    app(db)
        .withPropertyValues("relay.maintenance.enabled=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(Maintenance.class);
              // Nobody in the application holds the schema's maintenance lock.
              try (Maintenance own =
                  Maintenance.create(
                      db.dataSource(),
                      () -> DriverManager.getConnection(db.jdbcUrl()),
                      MaintenanceConfig.DEFAULT.withSchema(db.schema()))) {
                assertThat(own.runOnce().leader()).isTrue();
              }
            });
  }

  @Test
  void anOpaqueDataSourceGetsNoMaintenanceRatherThanALockOnAPooledConnection(TestDatabase db) {
    DataSource pool = db.newDataSource("opaque", 4);
    // Neither Hikari nor pgjdbc's DataSource: Relay cannot read a URL to open its own connections.
    DataSource opaque =
        (DataSource)
            Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {DataSource.class},
                (proxy, method, args) ->
                    switch (method.getName()) {
                      case "isWrapperFor" -> false;
                      case "unwrap" -> throw new SQLException("opaque");
                      default -> method.invoke(pool, args);
                    });
    Contexts.bare()
        .withConfiguration(AutoConfigurations.of(RelayMaintenanceAutoConfiguration.class))
        .withBean("dataSource", DataSource.class, () -> opaque)
        .withPropertyValues("relay.schema=" + db.schema(), "relay.maintenance.interval=1s")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(RelayConnections.class).shared()).isTrue();
              assertThat(context.getBean(Maintenance.class).isLeader()).isFalse();
              try (Maintenance own =
                  Maintenance.create(
                      db.dataSource(),
                      () -> DriverManager.getConnection(db.jdbcUrl()),
                      MaintenanceConfig.DEFAULT.withSchema(db.schema()))) {
                assertThat(own.runOnce().leader()).isTrue(); // the application holds no lock
              }
            });
  }

  private static void enqueue(TestDatabase db, String... ids) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (String id : ids) {
        outbox.enqueue(c, Work.of(id, "order_received", "{}"));
      }
      c.commit();
    }
  }
}
