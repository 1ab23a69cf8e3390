package dev.relay.bench;

import dev.relay.admin.Admin;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.MaintenanceResult;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.WorkFilter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * {@code --only console-pages}: the console's pages on a work table of {@code --retained} rows (5M
 * with {@code --full}), each timed as the reads its controller makes through {@link Admin}, p50 and
 * p95 of 20 calls after 3 warm-ups (5 calls when a warm-up took over a second). The work is filled
 * as {@link ConsoleOverviewBench}'s 1M mix, at full size: per 1000 rows 970 done, 10 failed, 10
 * cancelled, 8 ready, 2 running, finished work spread over the last 7 days, eight kinds on two
 * queues; done and cancelled rows in the history table's day partitions and the rest in the work
 * table, the layout a worker of this release leaves (see {@link ConsoleOverviewBench#fill}). Then
 * VACUUM ANALYZE and the maintenance leader's work: one {@link Maintenance#runOnce()} (its fold of
 * 100,000 rows into the charts' rollup, its purge finding nothing, its summary refresh) is timed;
 * the rest of the 7 days is added to the rollup by one SQL statement of the same shape as the fold,
 * so that the charts read what a rollup kept from the start would hold.
 *
 * <p>Pages: the overview (queue health over the console's 1 h window and the last hour's chart),
 * failures by reason, the work list's first page unfiltered, for each state, for one kind, one
 * queue, and ready work of one kind, and the charts page over 1 h, 24 h and 7 d for every queue and
 * kind and over 7 d for one pair. With {@value #REUSE} set, a previous run's rows are timed again
 * without a new fill.
 */
final class ConsolePagesBench {
  private static final int CALLS = 20;
  private static final int SLOW_CALLS = 5;
  private static final int WARM_UPS = 3;
  private static final int PAGE = 50;
  private static final String S = RelayBench.SCHEMA;

  /**
   * A system property: when true and the table already holds {@code --retained} rows and a rollup
   * (a previous run's fill), time the pages on them without filling again: a before/after of two
   * builds on the same rows. The rows age meanwhile (the last hour holds fewer completions).
   */
  static final String REUSE = "relay.bench.console-pages.reuse";

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;
  private final Admin admin;

  ConsolePagesBench(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
    this.admin = Admin.create(db.pool(), S);
  }

  void run() throws SQLException {
    int rows = sizes.retained();
    if (Boolean.getBoolean(REUSE) && reusable(rows)) {
      report.log(
          String.format(
              Locale.ROOT,
              "   reusing the %,d rows and the rollup already in %s (-D%s): no fill, no fold",
              rows,
              S,
              REUSE));
      pages(rows);
      return;
    }
    db.exec(
        "TRUNCATE "
            + S
            + ".outbox, "
            + S
            + ".work_history, "
            + S
            + ".tombstone, "
            + S
            + ".attempt, "
            + S
            + ".rollup CASCADE",
        "DELETE FROM " + S + ".rollup_watermark");
    long t0 = System.nanoTime();
    new ConsoleOverviewBench(db, sizes, report).fill(0, rows, ConsoleOverviewBench.MIXED);
    report.log(
        String.format(
            Locale.ROOT,
            "   filled %,d rows in %.0f s; not done: %,d",
            rows,
            RelayBench.seconds(t0),
            db.queryLong("SELECT count(*) FROM " + S + ".work WHERE state <> 'done'")));
    t0 = System.nanoTime();
    db.exec("VACUUM ANALYZE " + S + ".outbox", "VACUUM ANALYZE " + S + ".work_history");
    report.log(String.format(Locale.ROOT, "   vacuum analyze %.1f s", RelayBench.seconds(t0)));

    try (Maintenance m =
        Maintenance.create(
            db.pool(),
            db::connect,
            MaintenanceConfig.DEFAULT
                .withSchema(S)
                .withPolicy(PurgePolicy.DEFAULT.withWorkRetention(Duration.ofDays(30))))) {
      t0 = System.nanoTime();
      MaintenanceResult r = m.runOnce();
      record(rows, "maintenance-run", "once", RelayBench.seconds(t0) * 1000);
      report.log(
          String.format(
              Locale.ROOT,
              "   one maintenance run: %.1f s, folded %,d rows into the rollup",
              RelayBench.seconds(t0),
              r.rolledUp()));
    }
    t0 = System.nanoTime();
    foldTheRest();
    report.log(
        String.format(
            Locale.ROOT,
            "   rest of the rollup by SQL %.1f s; rollup rows: %,d",
            RelayBench.seconds(t0),
            db.queryLong("SELECT count(*) FROM " + S + ".rollup")));
    db.exec("ANALYZE " + S + ".rollup");
    pages(rows);
  }

  /** Whether the schema holds {@code rows} rows and the rollup is not empty (a previous fill). */
  private boolean reusable(int rows) throws SQLException {
    return db.queryLong("SELECT count(*) FROM " + S + ".work") == rows
        && db.queryLong("SELECT count(*) FROM " + S + ".rollup") > 0;
  }

  private void pages(int rows) {
    Duration hour = Duration.ofHours(1);
    time(
        rows,
        "overview",
        () -> {
          admin.health(hour);
          admin.completionsPerMinute(hour);
        });
    time(rows, "failures", admin::failureGroups);
    time(rows, "work-list", () -> admin.list(WorkFilter.all(), null, PAGE));
    for (String state : new String[] {"ready", "running", "done", "failed", "cancelled"}) {
      time(rows, "work-list-" + state, () -> admin.list(WorkFilter.all().state(state), null, PAGE));
    }
    time(rows, "work-list-kind", () -> admin.list(WorkFilter.all().kind("kind_3"), null, PAGE));
    time(rows, "work-list-queue", () -> admin.list(WorkFilter.all().queue("bulk"), null, PAGE));
    time(
        rows,
        "work-list-ready-kind",
        () -> admin.list(WorkFilter.all().state("ready").kind("kind_3"), null, PAGE));
    for (ChartWindow w : ChartWindow.values()) {
      time(rows, "charts-" + w.label(), () -> admin.charts(w, null, null));
    }
    time(rows, "charts-7d-one-pair", () -> admin.charts(ChartWindow.WEEK, "default", "kind_3"));
  }

  /**
   * Adds what the fold has not reached yet (up to a minute ago) to the rollup, in one statement of
   * the fold's shape: every row counted once, in its 1-minute, 15-minute and 1-hour buckets, the
   * latency histogram binned as {@code LatencyHistogram} does, then moves the watermark past it.
   * Both read the work view: finished rows are in the history table and the work table alike.
   */
  private void foldTheRest() throws SQLException {
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      s.execute("SET statement_timeout = 0");
      s.execute(
          """
          WITH w AS (SELECT last_completed_at, last_work_id FROM %1$s.rollup_watermark),
          rows AS (
              SELECT o.queue, o.kind, o.state, o.last_error_kind, o.completed_at,
                     CASE WHEN o.completed_at - o.created_at < interval '1 millisecond' THEN 0
                          ELSE least(127, 1 + floor(4 * log(2, (extract(epoch FROM
                               o.completed_at - o.created_at) * 1000)::numeric)))::int END AS bin
                FROM %1$s.work o, w
               WHERE o.state IN ('done', 'failed', 'cancelled')
                 AND (o.completed_at, o.work_id) > (w.last_completed_at, w.last_work_id)
                 AND o.completed_at <= clock_timestamp() - interval '1 minute'
          ),
          spans AS (SELECT unnest(ARRAY[60, 900, 3600]) AS span_s),
          bucketed AS (
              SELECT s.span_s,
                     to_timestamp(floor(extract(epoch FROM r.completed_at) / s.span_s)
                                  * s.span_s) AS bucket_start,
                     r.*
                FROM rows r CROSS JOIN spans s
               WHERE r.completed_at > clock_timestamp() - CASE s.span_s
                         WHEN 60 THEN interval '3 hours' WHEN 900 THEN interval '26 hours'
                         ELSE interval '8 days 2 hours' END
          ),
          bins AS (
              SELECT span_s, bucket_start, queue, kind, jsonb_object_agg(bin::text, n) AS m
                FROM (SELECT span_s, bucket_start, queue, kind, bin, count(*) AS n
                        FROM bucketed WHERE state = 'done'
                       GROUP BY 1, 2, 3, 4, 5) d
               GROUP BY 1, 2, 3, 4
          ),
          reasons AS (
              SELECT span_s, bucket_start, queue, kind, jsonb_object_agg(reason, n) AS failures
                FROM (SELECT span_s, bucket_start, queue, kind,
                             coalesce(last_error_kind, 'unknown') AS reason, count(*) AS n
                        FROM bucketed WHERE state = 'failed'
                       GROUP BY 1, 2, 3, 4, 5) f
               GROUP BY 1, 2, 3, 4
          ),
          totals AS (
              SELECT span_s, bucket_start, queue, kind,
                     count(*) FILTER (WHERE state = 'done') AS done,
                     count(*) FILTER (WHERE state = 'failed') AS failed,
                     count(*) FILTER (WHERE state = 'cancelled') AS cancelled
                FROM bucketed
               GROUP BY 1, 2, 3, 4
          )
          INSERT INTO %1$s.rollup AS r
                 (span_s, bucket_start, queue, kind, done, failed, cancelled, failures, latency)
          SELECT t.span_s, t.bucket_start, t.queue, t.kind, t.done, t.failed, t.cancelled,
                 coalesce(x.failures, '{}'),
                 ARRAY(SELECT coalesce((h.m ->> i::text)::int, 0)
                         FROM generate_series(0, 127) i ORDER BY i)
            FROM totals t
            LEFT JOIN bins h USING (span_s, bucket_start, queue, kind)
            LEFT JOIN reasons x USING (span_s, bucket_start, queue, kind)
              ON CONFLICT (span_s, bucket_start, queue, kind) DO UPDATE
             SET done = r.done + excluded.done, failed = r.failed + excluded.failed,
                 cancelled = r.cancelled + excluded.cancelled,
                 failures = (SELECT coalesce(jsonb_object_agg(e.key, e.n), '{}'::jsonb)
                               FROM (SELECT key, sum(value::bigint) AS n
                                       FROM (SELECT * FROM jsonb_each_text(r.failures)
                                             UNION ALL
                                             SELECT * FROM jsonb_each_text(excluded.failures)) u
                                      GROUP BY key) e),
                 latency = ARRAY(SELECT a + b FROM unnest(r.latency, excluded.latency)
                                  WITH ORDINALITY AS u(a, b, i) ORDER BY u.i)
          """
              .formatted(S));
      s.execute(
          """
          UPDATE %1$s.rollup_watermark
             SET (last_completed_at, last_work_id, folded_through) =
                 (SELECT o.completed_at, o.work_id, o.completed_at FROM %1$s.work o
                   WHERE o.state IN ('done', 'failed', 'cancelled')
                     AND o.completed_at <= clock_timestamp() - interval '1 minute'
                   ORDER BY o.completed_at DESC, o.work_id DESC LIMIT 1)
          """
              .formatted(S));
    }
  }

  private void time(int rows, String page, Runnable call) {
    long slowest = 0;
    for (int i = 0; i < WARM_UPS; i++) {
      long t0 = System.nanoTime();
      call.run();
      slowest = Math.max(slowest, System.nanoTime() - t0);
    }
    int calls = slowest > 1_000_000_000L ? SLOW_CALLS : CALLS;
    long[] nanos = new long[calls];
    for (int i = 0; i < calls; i++) {
      long t0 = System.nanoTime();
      call.run();
      nanos[i] = System.nanoTime() - t0;
    }
    Arrays.sort(nanos);
    double p50 = nanos[(calls + 1) / 2 - 1] / 1e6;
    double p95 = nanos[(int) Math.ceil(calls * 0.95) - 1] / 1e6;
    record(rows, page, "p50", p50);
    record(rows, page, "p95", p95);
    report.log(
        String.format(
            Locale.ROOT, "   %-22s p50 %8.1f ms  p95 %8.1f ms  (%d calls)", page, p50, p95, calls));
  }

  private void record(int rows, String page, String stat, double millis) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("rows", rows);
    p.put("page", page);
    p.put("stat", stat);
    report.add(new Scenario("console-pages", "relay", p, "ms")).add(millis);
  }
}
