package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Global limits across several Relay instances, each with its own pool, on one schema: what the
 * handlers see running at once and what the database holds as live claims never exceed a limit.
 */
@RelayDatabaseTest
class RelayLimitsTest {
  private final List<HikariDataSource> pools = new ArrayList<>();

  @AfterEach
  void closePools() {
    pools.forEach(HikariDataSource::close);
  }

  /** Handlers running now, and the most seen at once. */
  /**
   * Counts the handlers inside it. A gauge made with {@code meet} n holds its first n entrants
   * until all n are in (bounded by the fixture's patience), so a test sees that n can run at once
   * however the loaded machine schedules a 10 ms handler; a limit below n shows as a lower max.
   */
  static final class Gauge {
    final AtomicInteger now = new AtomicInteger();
    final AtomicInteger max = new AtomicInteger();
    private final CountDownLatch meet;

    Gauge() {
      this(1);
    }

    Gauge(int meet) {
      this.meet = new CountDownLatch(meet);
    }

    void enter() throws InterruptedException {
      int n = now.incrementAndGet();
      max.accumulateAndGet(n, Math::max);
      meet.countDown();
      meet.await(RelayFixture.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
    }

    void exit() {
      now.decrementAndGet();
    }
  }

  /** A short, bounded piece of work that keeps the handler slot busy (no sleep). */
  static void work(Duration d) {
    long end = System.nanoTime() + d.toNanos();
    while (System.nanoTime() - end < 0) {
      Thread.onSpinWait();
    }
  }

  /** A handler that counts itself in {@code gauges} while it works 10 ms. */
  static Handler gauged(Function<Claim, List<Gauge>> gauges) {
    return claim -> {
      List<Gauge> in = gauges.apply(claim);
      List<Gauge> entered = new ArrayList<>();
      try {
        for (Gauge gauge : in) {
          entered.add(gauge);
          gauge.enter();
        }
        work(Duration.ofMillis(10));
        return Outcome.done();
      } finally {
        entered.forEach(Gauge::exit);
      }
    };
  }

  /** Samples the live claims of a kind from the database until closed; keeps the most seen. */
  static final class LiveSampler {
    final AtomicInteger max = new AtomicInteger();
    private final Thread thread;
    private volatile boolean running = true;

    LiveSampler(TestDatabase db, String kind) {
      thread =
          new Thread(
              () -> {
                try (Connection c = db.connection();
                    PreparedStatement ps =
                        c.prepareStatement(
                            "SELECT count(*) FROM "
                                + db.schema()
                                + ".outbox WHERE kind = ? AND state = 'running'"
                                + " AND lease_until > clock_timestamp()")) {
                  ps.setString(1, kind);
                  while (running) {
                    try (ResultSet rs = ps.executeQuery()) {
                      rs.next();
                      max.accumulateAndGet(rs.getInt(1), Math::max);
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // sampling pace
                  }
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              },
              "live-sampler");
      thread.start();
    }

    /** Stops sampling; returns the most live claims seen. */
    int stop() throws InterruptedException {
      running = false;
      thread.join();
      return max.get();
    }
  }

  /** Starts an instance with its own pool of four connections and {@code threads} handlers. */
  private Relay start(
      RelayFixture f,
      TestDatabase db,
      String worker,
      int threads,
      UnaryOperator<Relay.Builder> handlers) {
    HikariDataSource pool = db.newDataSource("relay-" + worker, 4);
    pools.add(pool);
    return f.start(
        handlers.apply(f.builder(pool).workerId(worker).concurrency(threads).bufferSize(threads)));
  }

  private static List<Work> works(String kind, String prefix, String group, int n) {
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      works.add(Work.of(String.format("%s-%03d", prefix, i), kind, "{}").group(group));
    }
    return works;
  }

  private static void awaitDone(RelayFixture f, String kind, int n) {
    await()
        .atMost(RelayFixture.PATIENCE)
        .until(() -> f.count("kind = '" + kind + "' AND state = 'done'") == n);
  }

  @Test
  void aLimitOfTwoHoldsAcrossFourInstancesOfEightThreads(TestDatabase db) throws Exception {
    Gauge running = new Gauge(2);
    KindPolicy limited = KindPolicy.DEFAULT.withMaxRunning(2);
    LiveSampler live = new LiveSampler(db, "limited");
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(works("limited", "l", "", 40));
      for (String worker : List.of("w1", "w2", "w3", "w4")) {
        start(
            f, db, worker, 8, b -> b.handle("limited", limited, gauged(claim -> List.of(running))));
      }

      awaitDone(f, "limited", 40);
      assertThat(live.stop()).isBetween(1, 2);
      assertThat(running.max).hasValue(2); // reached, never passed
    } finally {
      live.stop();
    }
  }

  @Test
  void aPerGroupLimitOfOneRunsEachGroupAloneAndTheGroupsSideBySide(TestDatabase db)
      throws Exception {
    Map<String, Gauge> byGroup = new ConcurrentHashMap<>();
    Gauge all = new Gauge(2);
    KindPolicy perGroup = KindPolicy.DEFAULT.withMaxRunningPerGroup(1);
    try (RelayFixture f = new RelayFixture(db)) {
      List<Work> works = new ArrayList<>(works("grouped", "a", "customer-a", 12));
      works.addAll(works("grouped", "b", "customer-b", 12));
      f.enqueue(works);
      for (String worker : List.of("w1", "w2")) {
        start(
            f,
            db,
            worker,
            4,
            b ->
                b.handle(
                    "grouped",
                    perGroup,
                    gauged(
                        claim ->
                            List.of(
                                byGroup.computeIfAbsent(
                                    claim.workId().substring(0, 1), k -> new Gauge()),
                                all))));
      }

      awaitDone(f, "grouped", 24);
      assertThat(byGroup.get("a").max).hasValue(1);
      assertThat(byGroup.get("b").max).hasValue(1);
      assertThat(all.max).hasValue(2); // the limit is per group, not per kind
    }
  }

  @Test
  void raisingTheLimitRaisesTheConcurrencyReached(TestDatabase db) throws Exception {
    AtomicReference<Gauge> phase = new AtomicReference<>(new Gauge());
    Gauge first = phase.get();
    Handler handler = gauged(claim -> List.of(phase.get()));
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(works("raised", "one", "", 12));
      for (String worker : List.of("w1", "w2")) {
        start(
            f,
            db,
            worker,
            4,
            b -> b.handle("raised", KindPolicy.DEFAULT.withMaxRunning(1), handler));
      }
      awaitDone(f, "raised", 12);
      assertThat(first.max).hasValue(1);

      // A third instance registers a limit of 3: the last registration wins, and every instance
      // reads the limit in its claim, so the two started with 1 follow it too.
      Gauge second = new Gauge(3);
      phase.set(second);
      start(f, db, "w3", 4, b -> b.handle("raised", KindPolicy.DEFAULT.withMaxRunning(3), handler));
      f.enqueue(works("raised", "three", "", 36));
      awaitDone(f, "raised", 48);
      assertThat(second.max).hasValue(3);
    }
  }

  @Test
  void aWorkerClaimsALimitedKindAgainWhenItsOwnClaimEndsNotOnlyAtThePoll(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      start(
          f,
          db,
          "w1",
          4,
          b ->
              b.pollInterval(Duration.ofMinutes(10)) // a poll would come far too late
                  .handle(
                      "single",
                      KindPolicy.DEFAULT.withMaxRunning(1),
                      gauged(claim -> List.of(new Gauge()))));
      f.enqueue(works("single", "s", "", 10)); // one notification: one claim of one item

      // each later item is claimed when the previous one's outcome is recorded
      awaitDone(f, "single", 10);
    }
  }

  @Test
  void aRateLimitHoldsOverEveryWindowOfTheStoredClaimTimes(TestDatabase db) throws Exception {
    KindPolicy rated = KindPolicy.DEFAULT.withRateLimit(4, Duration.ofSeconds(1));
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(works("rated", "r", "", 14));
      for (String worker : List.of("w1", "w2", "w3")) {
        start(f, db, worker, 2, b -> b.handle("rated", rated, claim -> Outcome.done()));
      }
      awaitDone(f, "rated", 14);

      // For each stored claim time t, the claims within (t - 1 s, t]: never more than 4.
      long worst =
          db.queryLong(
              "SELECT max((SELECT count(*) FROM {schema}.claim_log o"
                  + " WHERE o.kind = c.kind AND o.claimed_at > c.claimed_at - interval '1 second'"
                  + " AND o.claimed_at <= c.claimed_at))"
                  + " FROM {schema}.claim_log c WHERE c.kind = 'rated'");
      assertThat(worst).isBetween(1L, 4L);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.claim_log WHERE kind = 'rated'"))
          .isGreaterThanOrEqualTo(14);
    }
  }

  @Nested
  class BadInput {
    private void refused(TestDatabase db, String setting, KindPolicy policy) throws SQLException {
      assertThatThrownBy(
              () ->
                  Relay.builder(db.dataSource())
                      .schema(db.schema())
                      .handle("k", policy, c -> Outcome.done())
                      .build())
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class,
              e -> assertThat(e.setting()).isEqualTo("kind k: " + setting));
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.limiter")).isZero();
    }

    @Test
    void limitsOfZeroNegativeOrTooShortAreRefusedNamingTheSetting(TestDatabase db)
        throws SQLException {
      refused(db, "maxRunning", KindPolicy.DEFAULT.withMaxRunning(0));
      refused(db, "maxRunningPerGroup", KindPolicy.DEFAULT.withMaxRunningPerGroup(-1));
      refused(db, "rateLimit", KindPolicy.DEFAULT.withRateLimit(0, Duration.ofSeconds(1)));
      refused(db, "rateInterval", KindPolicy.DEFAULT.withRateLimit(5, Duration.ofMillis(500)));
      refused(
          db,
          "rateLimit",
          KindPolicy.DEFAULT.withLimits(new FlowLimits(null, null, null, Duration.ofSeconds(1))));
    }

    @Test
    void anInvalidGroupIsRefusedAndNothingIsWritten(TestDatabase db) throws SQLException {
      try (RelayFixture f = new RelayFixture(db)) {
        assertThatThrownBy(() -> f.enqueue(Work.of("g-1", "k", "{}").group("no spaces")))
            .isInstanceOfSatisfying(
                InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("group"));
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }
  }

  @Nested
  class Groups {
    @Test
    void aRepeatWithAnotherGroupIsAlreadyEnqueuedAndKeepsTheStoredGroup(TestDatabase db)
        throws SQLException {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("g-1", "k", "{\"n\": 1}").group("customer-a"));
        try (Connection c = db.connection()) {
          c.setAutoCommit(false);
          EnqueueResult repeat =
              f.outbox.enqueue(c, Work.of("g-1", "k", "{\"n\": 1}").group("customer-b"));
          c.commit();
          assertThat(repeat.status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
        }
        assertThat(f.column("g-1", "group_key")).isEqualTo("customer-a");
      }
    }

    @Test
    void theGroupCannotBeChangedAfterEnqueue(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("g-2", "k", "{}").group("customer-a"));
        assertThatThrownBy(
                () ->
                    db.execute(
                        "UPDATE "
                            + db.schema()
                            + ".outbox SET group_key = 'customer-b' WHERE work_id = 'g-2'"))
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("immutable");
        assertThat(f.column("g-2", "group_key")).isEqualTo("customer-a");
      }
    }
  }
}
