package dev.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class RelayMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double counter(String name, String... tags) {
    return registry.find(name).tags(tags).counters().stream().mapToDouble(Counter::count).sum();
  }

  private long timerCount(String name, String... tags) {
    return registry.find(name).tags(tags).timers().stream().mapToLong(Timer::count).sum();
  }

  private double gauge(String name, String... tags) {
    return registry.find(name).tags(tags).gauges().stream().mapToDouble(Gauge::value).sum();
  }

  @Test
  void metricValuesAfterAScriptedRunEqualWhatTheTablesHold(TestDatabase db) throws Exception {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    RelayMetrics metrics = RelayMetrics.builder(admin).build();
    metrics.bindTo(registry);

    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(
          c,
          List.of(
              Work.of("m-1", "mail", "{}"),
              Work.of("m-2", "mail", "{}"),
              Work.of("m-3", "mail", "{}"),
              Work.of("m-fail", "mail", "{}"),
              Work.of("m-retry", "mail", "{}"),
              Work.of("m-snooze", "mail", "{}"),
              Work.of("m-throw", "mail", "{}"),
              Work.of("m-late", "mail", "{}").deadline(Instant.now().minusSeconds(60))));
      c.commit();
    }
    KindPolicy quick = KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(10), Duration.ofMillis(20));
    try (Relay relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(100))
            .listener(metrics.listener())
            .handle("mail", quick, new ScriptedMail())
            .build()) {
      relay.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  db.queryLong(
                              "SELECT count(*) FROM {schema}.work"
                                  + " WHERE state IN ('done', 'failed')")
                          == 8
                      && counter("relay.completions") == 6
                      && counter("relay.failures") == 2);
    }

    assertThat(counter("relay.completions", "queue", "default", "kind", "mail"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(6);
    assertThat(counter("relay.failures", "reason", "permanent"))
        .isEqualTo(
            count(
                db,
                "SELECT count(*) FROM {schema}.work WHERE state = 'failed'"
                    + " AND last_error_kind = 'permanent'"))
        .isEqualTo(1);
    assertThat(counter("relay.failures", "reason", "deadline"))
        .isEqualTo(
            count(
                db,
                "SELECT count(*) FROM {schema}.work WHERE state = 'failed'"
                    + " AND last_error_kind = 'deadline'"))
        .isEqualTo(1);
    assertThat(counter("relay.retries"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.attempt WHERE ending = 'retry'"))
        .isEqualTo(2);
    assertThat(counter("relay.snoozes", "queue", "default", "kind", "mail"))
        .isEqualTo(count(db, "SELECT sum(snoozes) FROM {schema}.work"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.attempt WHERE ending = 'snoozed'"))
        .isEqualTo(1);
    assertThat(counter("relay.claims"))
        .isEqualTo(count(db, "SELECT sum(claim_generation) FROM {schema}.work"))
        .isEqualTo(10);
    assertThat(counter("relay.claims.repeated"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.work WHERE claim_generation > 1"))
        .isEqualTo(3);
    assertThat(counter("relay.outcomes.uncertain"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.attempt WHERE outcome = 'unknown'"))
        .isEqualTo(3); // the retry, the throw, and the fail (whose effect the handler left unknown)
    assertThat(counter("relay.outcomes.uncertain", "reason", "handler_error")).isEqualTo(1);
    assertThat(counter("relay.outcomes.uncertain", "reason", "reported_unknown")).isEqualTo(2);
    assertThat(counter("relay.claims.expired")).isZero();
    assertThat(counter("relay.writes.stale"))
        .isEqualTo(count(db, "SELECT count(*) FROM {schema}.attempt WHERE ending = 'stale_write'"))
        .isZero();
    assertThat(timerCount("relay.handler.duration")).isEqualTo(10);
    assertThat(timerCount("relay.handler.duration", "result", "snooze")).isEqualTo(1);
    assertThat(timerCount("relay.handler.duration", "result", "error")).isEqualTo(1);
    assertThat(timerCount("relay.work.completion")).isEqualTo(6);

    // done and cancelled come from the summary the maintenance leader refreshes
    admin.refreshSummary();
    metrics.refresh();
    for (String state : List.of("ready", "running", "done", "failed", "cancelled")) {
      assertThat(gauge("relay.work.depth", "kind", "mail", "state", state))
          .as(state)
          .isEqualTo(count(db, "SELECT count(*) FROM {schema}.work WHERE state = '" + state + "'"));
    }
    assertThat(gauge("relay.work.oldest.eligible.age", "kind", "mail")).isZero();
    assertThat(gauge("relay.work.expired.leases", "kind", "mail")).isZero();
  }

  @Test
  void heldWorkGaugesCountWorkHeldByADependencyAndKeysHeldByAFailedItem(TestDatabase db)
      throws Exception {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    RelayMetrics metrics = RelayMetrics.builder(admin).build();
    metrics.bindTo(registry);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(
          c,
          List.of(
              Work.of("invoice-7", "mail", "{}"),
              Work.of("receipt-7", "mail", "{}").dependsOn("invoice-7"),
              Work.of("order-7-a", "mail", "{}").orderingKey("order-7"),
              Work.of("order-7-b", "mail", "{}").orderingKey("order-7")));
      c.commit();
    }
    metrics.refresh();
    assertThat(gauge("relay.work.blocked", "kind", "mail", "reason", "dependency_cancelled"))
        .isZero();
    assertThat(gauge("relay.work.blocked.keys", "kind", "mail")).isZero();

    admin.cancel("invoice-7", "olga", "customer withdrew"); // the receipt now waits for a person
    // the head of order-7 fails: order-7-b waits behind it
    db.execute("UPDATE {schema}.outbox SET state = 'failed' WHERE work_id = 'order-7-a'");
    metrics.refresh();

    assertThat(gauge("relay.work.blocked", "kind", "mail", "reason", "dependency_cancelled"))
        .isEqualTo(1);
    for (String other :
        List.of("dependency_failed", "dependency_superseded", "dependency_missing")) {
      // every reason has its series, at zero, so an alert sees it rise
      assertThat(registry.find("relay.work.blocked").tags("reason", other).gauge())
          .as(other)
          .isNotNull()
          .satisfies(g -> assertThat(g.value()).isZero());
    }
    assertThat(gauge("relay.work.blocked.keys", "kind", "mail")).isEqualTo(1);
  }

  @Test
  void oldestEligibleAgeGaugeFollowsTheTableAndRefreshesOnItsInterval(TestDatabase db)
      throws Exception {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (RelayMetrics metrics =
        RelayMetrics.builder(admin).refreshInterval(Duration.ofSeconds(1)).build()) {
      metrics.bindTo(registry);
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        outbox.enqueue(c, Work.of("waiting", "report", "{}").queue("slow"));
        c.commit();
      }
      db.execute(
          "UPDATE {schema}.outbox SET available_at = clock_timestamp() - interval '10 minutes'");
      metrics.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> gauge("relay.work.oldest.eligible.age", "queue", "slow") >= 600);
      assertThat(gauge("relay.work.depth", "queue", "slow", "state", "ready")).isEqualTo(1);
      db.execute("DELETE FROM {schema}.outbox");
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> gauge("relay.work.depth", "queue", "slow", "state", "ready") == 0);
    }
  }

  @Test
  void aRuntimesPairsAreRegisteredAtZeroAndEveryMeterHasADescription(TestDatabase db) {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    RelayMetrics metrics = RelayMetrics.builder(admin).build();
    metrics.bindTo(registry);
    try (Relay relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .queues("default", "mail")
            .handle("receipt", claim -> Outcome.done())
            .build()) {
      metrics.registerAtZero(relay.config()); // built, never started: no work, no events
    }
    for (String queue : List.of("default", "mail")) {
      for (String name :
          List.of(
              "relay.claims",
              "relay.claims.repeated",
              "relay.claims.expired",
              "relay.completions",
              "relay.snoozes")) {
        assertThat(registry.find(name).tags("queue", queue, "kind", "receipt").counter())
            .as("%s of %s", name, queue)
            .isNotNull()
            .satisfies(c -> assertThat(c.count()).isZero());
      }
      assertThat(gauge("relay.work.depth", "queue", queue, "kind", "receipt", "state", "ready"))
          .isZero();
      assertThat(registry.find("relay.work.oldest.eligible.age").tags("queue", queue).gauge())
          .isNotNull();
    }
    assertThat(registry.getMeters())
        .isNotEmpty()
        .allSatisfy(
            m ->
                assertThat(m.getId().getDescription())
                    .as("description of %s", m.getId().getName())
                    .isNotBlank());
    assertThat(RelayMetrics.DESCRIPTIONS.values()).allSatisfy(d -> assertThat(d).isNotBlank());
  }

  /**
   * close() waits for a refresh under way, so that the pool it reads can close right after: a
   * refresh cut off by a closing pool once logged a warning with a stack trace at every stop.
   */
  @Test
  void closeWaitsForARefreshUnderWayToEnd(TestDatabase db) throws Exception {
    CountDownLatch refreshing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean first = new AtomicBoolean(true);
    List<String> events = new CopyOnWriteArrayList<>();
    DataSource real = db.dataSource();
    DataSource slow =
        (DataSource)
            Proxy.newProxyInstance(
                DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("getConnection") && first.getAndSet(false)) {
                    refreshing.countDown();
                    awaitIgnoringInterrupts(release); // a query under way: no interrupt ends it
                    events.add("refresh ended");
                  }
                  try {
                    return method.invoke(real, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    RelayMetrics metrics = RelayMetrics.builder(Admin.create(slow, db.schema())).build();
    metrics.bindTo(registry);
    metrics.start();
    assertThat(refreshing.await(60, TimeUnit.SECONDS)).isTrue();
    Thread closer =
        new Thread(
            () -> {
              metrics.close();
              events.add("closed");
            });
    closer.start();
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                closer.getState() == Thread.State.TIMED_WAITING
                    || closer.getState() == Thread.State.TERMINATED);
    release.countDown();
    closer.join(TimeUnit.MINUTES.toMillis(1));
    assertThat(events).containsExactly("refresh ended", "closed");
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static double count(TestDatabase db, String sql) throws SQLException {
    return db.queryLong(sql);
  }
}
