package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.admin.Admin;
import dev.relay.admin.ChartPoint;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Charts;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.QueueHealth;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The charts' rollup (V20): the maintenance leader's fold counts every finished item exactly once,
 * whoever folds and however often, and the percentiles read from summed histograms stay within the
 * documented error.
 */
@RelayDatabaseTest
class RollupFoldTest {
  private static final Timeouts T = Timeouts.DEFAULT;

  /** A fold without lag, in small batches so that batches end inside runs of equal times. */
  private static RollupFold fold(TestDatabase db, int batch) {
    return new RollupFold(SchemaName.of(db.schema()), T, Duration.ZERO, batch);
  }

  /**
   * {@code n} finished items named {@code prefix-i}: mostly done, some failed (two reasons and
   * none), some cancelled; ended between {@code fromMin} and {@code toMin} minutes ago, in runs of
   * five sharing one completed_at, on two queues and three kinds. Done and cancelled items with an
   * even number are in the history table (in their day's partition), as a worker of this release
   * leaves them; the others in the work table, as an older worker did: both interleave in the
   * fold's order, within runs of one completed_at too.
   */
  private static void finished(TestDatabase db, String prefix, int n, int fromMin, int toMin)
      throws Exception {
    db.execute(
        ("INSERT INTO {schema}.outbox (work_id, kind, payload, queue, state, created_at,"
                + " completed_at, claim_generation, attempts, first_attempt_at, last_error_kind)"
                + " SELECT '%1$s-' || g, 'k' || (g %% 3), '{}', 'q' || (g %% 2),"
                + " CASE WHEN g %% 10 = 0 THEN 'failed' WHEN g %% 10 = 1 THEN 'cancelled'"
                + " ELSE 'done' END,"
                + " t.at - (g %% 7) * interval '1 second', t.at, 1, 1, t.at,"
                + " CASE WHEN g %% 30 = 0 THEN 'http_500' WHEN g %% 30 = 10 THEN 'timeout' END"
                + " FROM generate_series(1, %2$d) g,"
                + " LATERAL (SELECT date_trunc('second', clock_timestamp())"
                + " - interval '%3$d minutes' + (g / 5) * ((%3$d - %4$d) * 60.0 / %2$d * 5)"
                + " * interval '1 second' AS at) t")
            .formatted(prefix, n, fromMin, toMin));
    db.execute(
        ("SELECT {schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)"
                + " FROM generate_series(0, %1$d) AS d;"
                + " WITH moved AS (DELETE FROM {schema}.outbox"
                + " WHERE work_id ~ '^%2$s-[0-9]*[02468]$' AND state IN ('done', 'cancelled')"
                + " RETURNING *)"
                + " INSERT INTO {schema}.work_history SELECT * FROM moved")
            .formatted(fromMin / (60 * 24) + 1, prefix));
  }

  /** Sums of one tier's rows: done, failed, cancelled. */
  private static long[] tier(TestDatabase db, int span) throws Exception {
    return new long[] {
      db.queryLong("SELECT coalesce(sum(done), 0) FROM {schema}.rollup WHERE span_s = " + span),
      db.queryLong("SELECT coalesce(sum(failed), 0) FROM {schema}.rollup WHERE span_s = " + span),
      db.queryLong("SELECT coalesce(sum(cancelled), 0) FROM {schema}.rollup WHERE span_s = " + span)
    };
  }

  private static long[] table(TestDatabase db) throws Exception {
    return new long[] {
      db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"),
      db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"),
      db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'")
    };
  }

  private static void assertEveryTierCountsTheTable(TestDatabase db) throws Exception {
    long[] expected = table(db);
    for (int span : RollupFold.SPANS) {
      assertThat(tier(db, span)).as("tier of %d s", span).containsExactly(expected);
    }
  }

  @Nested
  class CountingOnce {
    @Test
    void twoFoldersRacingCountEachFinishedItemOnce(TestDatabase db) throws Exception {
      finished(db, "a", 3_000, 50, 2);
      long total = 3_000;
      ExecutorService pool = Executors.newFixedThreadPool(2);
      CyclicBarrier start = new CyclicBarrier(2);
      try {
        List<Future<Long>> folders = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
          folders.add(
              pool.submit(
                  () -> {
                    // Each its own connection, as two leaders in two processes would have.
                    try (Connection c = db.connection()) {
                      RollupFold f = fold(db, 97);
                      start.await();
                      long rows = 0;
                      for (long n = -1; n != 0; ) {
                        n = f.foldOnce(c).rows();
                        rows += n;
                      }
                      return rows;
                    }
                  }));
        }
        long folded = folders.get(0).get() + folders.get(1).get();
        // Another session's transaction may hold the bound back for a moment: fold the rest.
        try (Connection c = db.connection()) {
          RollupFold f = fold(db, 97);
          await()
              .atMost(Duration.ofSeconds(60))
              .until(() -> f.fold(c, 100).rows() == 0 && tier(db, 60)[0] == table(db)[0]);
        }
        assertThat(folded).isLessThanOrEqualTo(total);
      } finally {
        pool.shutdownNow();
      }
      assertEveryTierCountsTheTable(db);
      assertThat(db.queryLong("SELECT folded FROM {schema}.rollup_watermark")).isEqualTo(total);
    }

    @Test
    void aLeaderChangeBetweenRunsNeitherLosesNorRepeatsWork(TestDatabase db) throws Exception {
      finished(db, "first", 400, 50, 20);
      try (Maintenance a = maintenance(db);
          Maintenance b = maintenance(db)) {
        assertThat(a.runOnce().rolledUp()).isEqualTo(400);
        assertThat(b.runOnce().leader()).isFalse();
        // Work that finished after the first fold, then the leader stops; the other takes over.
        finished(db, "second", 300, 19, 2);
        a.stop();
        assertThat(b.runOnce().rolledUp()).isEqualTo(300);
        assertThat(b.runOnce().rolledUp()).isZero();
        // And back: a restarted instance continues from the stored position, not from scratch.
        b.stop();
        assertThat(a.runOnce().rolledUp()).isZero();
      }
      assertEveryTierCountsTheTable(db);
    }

    @Test
    void aFoldRolledBackLeavesNoCountsAndTheNextOneCountsThem(TestDatabase db) throws Exception {
      finished(db, "a", 200, 30, 2);
      // A fold whose transaction fails after its upserts, at the watermark's update (as if the
      // process died before its commit): nothing of it stays.
      db.execute(
          "ALTER TABLE {schema}.rollup_watermark ADD CONSTRAINT crash CHECK (folded < 0) NOT VALID");
      try (Connection c = db.connection()) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> fold(db, 50).foldOnce(c))
            .isInstanceOf(RuntimeException.class)
            .hasMessageContaining("crash");
      }
      db.execute("ALTER TABLE {schema}.rollup_watermark DROP CONSTRAINT crash");
      assertThat(tier(db, 60)).containsExactly(0, 0, 0);
      try (Connection c = db.connection()) {
        fold(db, 50).fold(c, 100);
      }
      assertEveryTierCountsTheTable(db);
    }

    @Test
    void aTransactionStillFinishingWorkHoldsTheFoldBackUntilItCommits(TestDatabase db)
        throws Exception {
      db.execute(
          "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('late', 'k', '{}'),"
              + " ('early', 'k', '{}')");
      try (Connection late = db.connection();
          Connection c = db.connection()) {
        late.setAutoCommit(false);
        try (Statement s = late.createStatement()) {
          // It samples its completion time now and commits only after the fold below.
          s.executeUpdate(
              "UPDATE "
                  + db.schema()
                  + ".outbox SET state = 'done', completed_at = clock_timestamp()"
                  + " WHERE work_id = 'late'");
        }
        // Another item finishes later and commits at once.
        db.execute(
            "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
                + " WHERE work_id = 'early'");
        RollupFold f = fold(db, 50);
        f.fold(c, 10);
        // Without the bound the fold would have moved past 'late' with 'early'.
        assertThat(tier(db, 60)[0]).isZero();
        late.commit();
        await().atMost(Duration.ofSeconds(60)).until(() -> f.fold(c, 10).rows() > 0);
        f.fold(c, 10);
      }
      assertEveryTierCountsTheTable(db);
    }

    private Maintenance maintenance(TestDatabase db) {
      return Maintenance.create(
          db.dataSource(),
          () -> DriverManager.getConnection(db.jdbcUrl()),
          MaintenanceConfig.DEFAULT.withSchema(db.schema()));
    }
  }

  @Nested
  class Reading {
    @Test
    void percentilesFromSummedHistogramsAreWithinTheDocumentedError(TestDatabase db)
        throws Exception {
      // 2,000 done items with times from 2 ms to about 2 days, spread log-uniformly, ended over
      // the last 50 minutes: every window's totals and percentiles come from many buckets.
      Random random = new Random(25);
      long[] micros = new long[2_000];
      try (Connection c = db.connection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO "
                      + db.schema()
                      + ".outbox (work_id, kind, payload, state, created_at, completed_at,"
                      + " claim_generation, attempts, first_attempt_at)"
                      + " VALUES (?, 'k', '{}', 'done', ?, ?, 1, 1, ?)")) {
        OffsetDateTime now = OffsetDateTime.now();
        for (int i = 0; i < micros.length; i++) {
          micros[i] = Math.round(Math.pow(10, 3.3 + random.nextDouble() * 7.9));
          OffsetDateTime completed = now.minusSeconds(120 + random.nextInt(48 * 60));
          ps.setString(1, "item-" + i);
          ps.setObject(2, completed.minusNanos(micros[i] * 1_000));
          ps.setObject(3, completed);
          ps.setObject(4, completed);
          ps.addBatch();
        }
        ps.executeBatch();
        fold(db, 300).fold(c, 100);
      }
      long[] sorted = micros.clone();
      Arrays.sort(sorted);
      Admin admin = Admin.create(db.dataSource(), db.schema());
      for (ChartWindow w : ChartWindow.values()) {
        Charts charts = admin.charts(w, null, null);
        assertThat(charts.done()).as(w.label()).isEqualTo(2_000);
        assertThat(charts.points()).hasSize(w.points());
        assertThat(charts.points().stream().mapToLong(ChartPoint::done).sum()).isEqualTo(2_000);
        assertWithin(charts.p50().toNanos() / 1_000.0, sorted[999]);
        assertWithin(charts.p95().toNanos() / 1_000.0, sorted[1_899]);
      }
    }

    private void assertWithin(double reported, long exact) {
      assertThat(Math.abs(reported - exact) / exact)
          .as("reported %s µs for %s µs", reported, exact)
          .isLessThanOrEqualTo(LatencyHistogram.RELATIVE_ERROR + 1e-6);
    }

    @Test
    void healthAndTheMinuteChartCountTheWindowFromTheRollupAndTheTableAfterIt(TestDatabase db)
        throws Exception {
      // Ended 50 to 2 minutes ago (in the last hour's window) and 90 to 70 minutes ago (not),
      // folded; then more ends after the fold's position, which only the table holds.
      finished(db, "a", 900, 50, 2);
      finished(db, "old", 300, 90, 70);
      try (Connection c = db.connection()) {
        fold(db, 400).fold(c, 10);
      }
      db.execute(
          "INSERT INTO {schema}.outbox (work_id, kind, payload, queue, state, created_at,"
              + " completed_at, claim_generation, attempts, first_attempt_at, last_error_kind)"
              + " SELECT 'tail-' || g, 'k' || (g % 3), '{}', 'q' || (g % 2),"
              + " CASE WHEN g % 4 = 0 THEN 'failed' ELSE 'done' END,"
              + " clock_timestamp() - g * interval '100 milliseconds', clock_timestamp(), 1, 1,"
              + " clock_timestamp(), CASE WHEN g % 4 = 0 THEN 'timeout' END"
              + " FROM generate_series(1, 40) g");
      Admin admin = Admin.create(db.dataSource(), db.schema());
      Map<String, QueueHealth> expected = byPair(expectedFromTheTable(db));
      Map<String, QueueHealth> health = byPair(admin.health(Duration.ofHours(1)));
      assertThat(health.keySet()).isEqualTo(expected.keySet()).hasSize(6);
      for (String pair : expected.keySet()) {
        QueueHealth h = health.get(pair);
        QueueHealth e = expected.get(pair);
        assertThat(h.completedInWindow()).as(pair).isEqualTo(e.completedInWindow()).isPositive();
        assertThat(h.completionP50()).as(pair).isEqualTo(e.completionP50());
        assertThat(h.completionP95()).as(pair).isEqualTo(e.completionP95());
        assertThat(h.failuresByReason()).as(pair).isEqualTo(e.failuresByReason());
      }
      long doneInChart =
          admin.completionsPerMinute(Duration.ofHours(1)).stream()
              .mapToLong(dev.relay.admin.CompletionMinute::done)
              .sum();
      long doneInTable =
          db.queryLong(
              "SELECT count(*) FROM {schema}.work WHERE state = 'done'"
                  + " AND completed_at > clock_timestamp() - interval '1 hour'");
      assertThat(doneInChart).isEqualTo(doneInTable);

      // The folded part comes from the rollup: purging it from the table changes nothing.
      db.execute("DELETE FROM {schema}.outbox WHERE work_id LIKE 'a-%'");
      db.execute("DELETE FROM {schema}.work_history WHERE work_id LIKE 'a-%'");
      Map<String, QueueHealth> afterPurge = byPair(admin.health(Duration.ofHours(1)));
      for (String pair : expected.keySet()) {
        assertThat(afterPurge.get(pair).completedInWindow())
            .as(pair)
            .isEqualTo(expected.get(pair).completedInWindow());
        assertThat(afterPurge.get(pair).completionP95())
            .as(pair)
            .isEqualTo(expected.get(pair).completionP95());
      }
      assertThat(
              admin.completionsPerMinute(Duration.ofHours(1)).stream()
                  .mapToLong(dev.relay.admin.CompletionMinute::done)
                  .sum())
          .isEqualTo(doneInChart);
    }

    /**
     * Health over the last hour computed from the table itself: done counts, histogram percentiles
     * of their times and failures by reason per (queue, kind).
     */
    private List<QueueHealth> expectedFromTheTable(TestDatabase db) throws Exception {
      List<QueueHealth> result = new ArrayList<>();
      try (Connection c = db.connection();
          Statement st = c.createStatement();
          ResultSet rs =
              st.executeQuery(
                  "SELECT queue, kind, array_agg(CASE WHEN state = 'done' THEN"
                      + " (extract(epoch FROM completed_at - created_at) * 1000000)::int8 END)"
                      + " AS micros, array_agg(CASE WHEN state = 'failed'"
                      + " THEN coalesce(last_error_kind, 'unknown') END) AS reasons"
                      + " FROM "
                      + db.schema()
                      + ".work WHERE state IN ('done', 'failed')"
                      + " AND completed_at > clock_timestamp() - interval '1 hour'"
                      + " GROUP BY queue, kind")) {
        while (rs.next()) {
          long[] bins = new long[LatencyHistogram.BINS];
          long done = 0;
          for (Object m : (Object[]) rs.getArray("micros").getArray()) {
            if (m != null) {
              bins[LatencyHistogram.bin(((Number) m).longValue())]++;
              done++;
            }
          }
          Map<String, Long> failures = new java.util.HashMap<>();
          for (Object r : (Object[]) rs.getArray("reasons").getArray()) {
            if (r != null) {
              failures.merge((String) r, 1L, Long::sum);
            }
          }
          result.add(
              new QueueHealth(
                  rs.getString("queue"),
                  rs.getString("kind"),
                  0,
                  0,
                  0,
                  0,
                  0,
                  Duration.ZERO,
                  0,
                  0,
                  failures,
                  done,
                  LatencyHistogram.quantile(bins, 0.5),
                  LatencyHistogram.quantile(bins, 0.95),
                  null,
                  Map.of(),
                  null));
        }
      }
      return result;
    }

    private static Map<String, QueueHealth> byPair(List<QueueHealth> health) {
      Map<String, QueueHealth> m = new java.util.TreeMap<>();
      for (QueueHealth h : health) {
        m.put(h.queue() + "/" + h.kind(), h);
      }
      return m;
    }

    @Test
    void chartsPerQueueAndKindCountTheirOwnAndListEveryPair(TestDatabase db) throws Exception {
      finished(db, "a", 600, 50, 2);
      try (Connection c = db.connection()) {
        fold(db, 1_000).fold(c, 10);
      }
      Admin admin = Admin.create(db.dataSource(), db.schema());
      Charts all = admin.charts(ChartWindow.HOUR, null, null);
      Charts one = admin.charts(ChartWindow.DAY, "q1", "k2");
      assertThat(all.pairs()).hasSize(6);
      assertThat(one.done())
          .isEqualTo(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.work WHERE state = 'done' AND queue = 'q1'"
                      + " AND kind = 'k2'"));
      assertThat(all.failuresByReason())
          .containsExactly(
              Map.entry("http_500", 20L), Map.entry("timeout", 20L), Map.entry("unknown", 20L));
      assertThat(all.failed()).isEqualTo(60);
      assertThat(all.cancelled()).isEqualTo(60);
      assertThat(all.foldedThrough()).isNotNull();
    }

    @Test
    void bucketsPastTheirTiersKeepAreDropped(TestDatabase db) throws Exception {
      String zeros = "array_fill(0, ARRAY[128])";
      db.execute(
          "INSERT INTO {schema}.rollup (span_s, bucket_start, queue, kind, done, latency) VALUES"
              + " (60, date_trunc('minute', now()) - interval '4 hours', 'q', 'k', 1, "
              + zeros
              + "), (60, date_trunc('minute', now()) - interval '2 hours', 'q', 'k', 1, "
              + zeros
              + "), (900, date_trunc('hour', now()) - interval '27 hours', 'q', 'k', 1, "
              + zeros
              + "), (3600, date_trunc('hour', now()) - interval '7 days', 'q', 'k', 1, "
              + zeros
              + "), (3600, date_trunc('hour', now()) - interval '9 days', 'q', 'k', 1, "
              + zeros
              + ")");
      try (Connection c = db.connection()) {
        fold(db, 100).fold(c, 1);
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.rollup WHERE span_s = 60"))
          .isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.rollup WHERE span_s = 900")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.rollup WHERE span_s = 3600"))
          .isEqualTo(1);
    }
  }

  /**
   * The fold's read of finished work, on tables that are mostly finished work: each branch a range
   * of its index in the fold's order, the history table's in the partitions from the position on.
   */
  @Test
  void theFoldReadsFinishedWorkThroughTheFinishedIndexNeverTheWholeTable(TestDatabase db)
      throws Exception {
    finished(db, "bulk", 30_000, 60 * 24 * 7, 2);
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload) SELECT 'ready-' || g, 'k', '{}'"
            + " FROM generate_series(1, 2000) g; ANALYZE {schema}.outbox;"
            + " ANALYZE {schema}.work_history");
    RollupSql sql = RollupSql.of(SchemaName.of(db.schema()));
    StringBuilder plan = new StringBuilder();
    OffsetDateTime from = OffsetDateTime.now().minusDays(3);
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql.foldBatch)) {
      int i = 1;
      for (int branch = 0; branch < RollupSql.FOLD_BRANCHES; branch++) {
        ps.setObject(i++, from);
        ps.setObject(i++, from);
        ps.setString(i++, "");
        ps.setObject(i++, OffsetDateTime.now());
        ps.setInt(i++, 5_000);
      }
      ps.setInt(i, 5_000);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
    }
    String text = plan.toString();
    assertThat(text)
        .as(text)
        .contains("outbox_finished_idx")
        .containsPattern("work_history_\\d{8}_completed_at_work_id_idx")
        .doesNotContain("Seq Scan on outbox")
        .doesNotContain("Seq Scan on work_history_default");
    // rows folded before the position, 4 to 7 days ago, are not read: their partitions are pruned
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThanOrEqualTo(5_000);
    assertThat(text)
        .as(text)
        .doesNotContain(
            "work_history_"
                + from.minusDays(2)
                    .atZoneSameInstant(java.time.ZoneOffset.UTC)
                    .format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd")));
  }
}
