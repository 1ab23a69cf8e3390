package dev.relay.bench;

import dev.relay.admin.Admin;
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
 * {@code --only console-overview}: how long the console's overview takes on a big work table,
 * through the {@link Admin} API the console calls. The work is filled straight into the schema with
 * {@code generate_series} (no enqueue protocol: this measures reads), laid out as a worker of this
 * release leaves it: done and cancelled rows in the history table's day partitions, the rest in the
 * work table. First 1M rows, mostly done over the last seven days, 1% failed, 1% cancelled, 0.8%
 * ready and 0.2% running, eight kinds in two queues ("mixed"); then, when {@code --retained} is
 * larger (5M with {@code --full}), grown to that many rows by done work only, so the backlog stays
 * ("same-backlog"); then by the backlog the mix would have at that size ("same-share": 3% of the
 * added rows failed, cancelled, ready or running). The overview's cost follows the unfinished and
 * failed rows; the steps tell table size and backlog apart. After each step: VACUUM ANALYZE (as
 * autovacuum would have) and one summary refresh, as the maintenance leader does, whose time is
 * reported too.
 *
 * <p>Measured, median of 15 calls after 3 warm-ups: the page's three reads (health, completions per
 * minute over the last hour, failure groups) together and each alone, and first list pages (all,
 * failed, ready). The ready page is measured again with a partial index on {@code (created_at,
 * work_id) WHERE state = 'ready'} created for the measurement and dropped afterwards, to decide
 * whether such an index is worth its write per enqueue.
 */
final class ConsoleOverviewBench {
  private static final int CALLS = 15;
  private static final int WARM_UPS = 3;
  private static final String T = RelayBench.SCHEMA + ".outbox";
  private static final String HISTORY = RelayBench.SCHEMA + ".work_history";

  /** All work, unfinished and finished: the view the console reads. */
  private static final String WORK = RelayBench.SCHEMA + ".work";

  /** Every 1000 rows: 10 failed, 10 cancelled, 8 ready, 2 running, the rest done. */
  static final String MIXED =
      """
      CASE WHEN g % 1000 < 10 THEN 'failed' WHEN g % 1000 < 20 THEN 'cancelled'
           WHEN g % 1000 < 28 THEN 'ready' WHEN g % 1000 < 30 THEN 'running' ELSE 'done' END\
      """;

  /** The mix without its done work: every 30 rows 10 failed, 10 cancelled, 8 ready, 2 running. */
  private static final String BACKLOG =
      """
      CASE WHEN g % 30 < 10 THEN 'failed' WHEN g % 30 < 20 THEN 'cancelled'
           WHEN g % 30 < 28 THEN 'ready' ELSE 'running' END\
      """;

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;
  private final Admin admin;

  ConsoleOverviewBench(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
    this.admin = Admin.create(db.pool(), RelayBench.SCHEMA);
  }

  void run() throws SQLException {
    db.exec(
        "TRUNCATE "
            + T
            + ", "
            + HISTORY
            + ", "
            + RelayBench.SCHEMA
            + ".tombstone, "
            + RelayBench.SCHEMA
            + ".attempt CASCADE");
    step(0, 1_000_000, MIXED, "mixed");
    int big = sizes.retained();
    if (big > 1_000_000) {
      // The table grows, the backlog does not: what table size alone costs.
      step(1_000_000, big, "'done'", "same-backlog");
      // Then the backlog grows to the 1M mix's share (3% of rows not done).
      step(big, big + (big - 1_000_000) / 1000 * 30, BACKLOG, "same-share");
    }
  }

  private void step(int from, int to, String state, String mix) throws SQLException {
    long t0 = System.nanoTime();
    fill(from, to, state);
    report.log(
        String.format(
            Locale.ROOT,
            "   filled %,d rows (%s) in %.0f s; not done: %,d",
            to,
            mix,
            RelayBench.seconds(t0),
            db.queryLong("SELECT count(*) FROM " + WORK + " WHERE state <> 'done'")));
    t0 = System.nanoTime();
    db.exec("VACUUM ANALYZE " + T, "VACUUM ANALYZE " + HISTORY);
    report.log(String.format(Locale.ROOT, "   vacuum analyze %.1f s", RelayBench.seconds(t0)));
    t0 = System.nanoTime();
    admin.refreshSummary();
    record(to, mix, "summary-refresh", RelayBench.seconds(t0) * 1000);
    measure(to, mix);
  }

  /**
   * Rows {@code from + 1} to {@code to}, their state from {@code state} (an expression of {@code
   * g}), in chunks of 500,000 (one transaction each). Finished work ended over the last 7 days
   * (spread evenly, so ~1/168 of it in the last hour); ready and running work was created within
   * the last hour. Done and cancelled rows go to the history table (a worker's completion or its
   * answer to a cancel request moves the row there), into the partitions of their UTC days, which
   * are created first as the maintenance leader would have; failed, ready and running rows go to
   * the work table.
   */
  void fill(int from, int to, String state) throws SQLException {
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      s.execute("SET statement_timeout = 0");
      s.execute(
          "SELECT "
              + RelayBench.SCHEMA
              + ".add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)"
              + " FROM generate_series(0, 7) AS d");
      for (int lo = from + 1; lo <= to; lo += 500_000) {
        int hi = Math.min(to, lo + 499_999);
        s.execute(
            """
            WITH made AS (
                SELECT 'c-' || g AS work_id, 'kind_' || (g %% 8) AS kind,
                       CASE WHEN g %% 5 = 0 THEN 'bulk' ELSE 'default' END AS queue,
                       jsonb_build_object('n', g) AS payload, st AS state,
                       t - interval '2 seconds' AS created_at,
                       t - interval '2 seconds' AS available_at,
                       CASE WHEN st IN ('done', 'failed', 'cancelled') THEN t END AS completed_at,
                       CASE WHEN st = 'ready' THEN 0 ELSE 1 END AS claim_generation,
                       CASE WHEN st = 'ready' THEN 0 ELSE 1 END AS attempts,
                       CASE WHEN st = 'ready' THEN NULL ELSE t - interval '1 second' END
                           AS first_attempt_at,
                       CASE WHEN st = 'running' THEN 'worker-' || (g %% 4) END AS claimed_by,
                       CASE WHEN st = 'running' THEN clock_timestamp() + interval '1 minute' END
                           AS lease_until,
                       CASE WHEN st = 'failed' THEN 'http_' || (500 + g %% 4) END
                           AS last_error_kind,
                       CASE WHEN st = 'failed' THEN 'bench failure' END AS last_error,
                       CASE WHEN st = 'done' THEN 'delivered'
                            WHEN st = 'failed' THEN 'not_delivered' END AS outcome
                  FROM (SELECT g, st,
                               CASE WHEN st IN ('ready', 'running')
                                    THEN clock_timestamp() - (g %% 3600) * interval '1 second'
                                    ELSE clock_timestamp() - interval '7 days'
                                         + ((g %% 1000003)::float8 / 1000003) * interval '7 days'
                                    END AS t
                          FROM (SELECT g, CASE WHEN %4$s = 'running' THEN 'ready' ELSE %4$s END
                                          AS st FROM generate_series(%2$d, %3$d) g) y) x
            ), finished AS (
                INSERT INTO %5$s (work_id, kind, queue, payload, state, created_at,
                                  available_at, completed_at, claim_generation, attempts,
                                  first_attempt_at, claimed_by, lease_until, last_error_kind,
                                  last_error, outcome)
                SELECT * FROM made WHERE state IN ('done', 'cancelled')
            )
            INSERT INTO %1$s (work_id, kind, queue, payload, state, created_at, available_at,
                              completed_at, claim_generation, attempts, first_attempt_at,
                              claimed_by, lease_until, last_error_kind, last_error, outcome)
            SELECT * FROM made WHERE state NOT IN ('done', 'cancelled')
            """
                .formatted(T, lo, hi, state, HISTORY));
        // Running rows are inserted ready and then claimed: the trigger of V18 refuses an inserted
        // claim that is not a local hand-off's.
        s.execute(
            """
            UPDATE %1$s o
               SET state = 'running', claim_generation = 1, attempts = 1,
                   first_attempt_at = o.created_at + interval '1 second',
                   claimed_by = 'worker-' || (y.g %% 4),
                   lease_until = clock_timestamp() + interval '1 minute'
              FROM (SELECT g FROM generate_series(%2$d, %3$d) g WHERE %4$s = 'running') y
             WHERE o.work_id = 'c-' || y.g
            """
                .formatted(T, lo, hi, state));
        report.log(String.format(Locale.ROOT, "   ... %,d rows", hi));
      }
    }
  }

  private void measure(int rows, String mix) throws SQLException {
    Duration hour = Duration.ofHours(1);
    time(
        rows,
        mix,
        "overview-page",
        () -> {
          admin.health(hour);
          admin.completionsPerMinute(hour);
          admin.failureGroups();
        });
    time(rows, mix, "health", () -> admin.health(hour));
    time(rows, mix, "completions-per-minute", () -> admin.completionsPerMinute(hour));
    time(rows, mix, "failure-groups", admin::failureGroups);
    time(rows, mix, "list-first-page", () -> admin.list(WorkFilter.all(), null, 50));
    time(rows, mix, "list-failed", () -> admin.list(WorkFilter.all().state("failed"), null, 50));
    time(rows, mix, "list-ready", () -> admin.list(WorkFilter.all().state("ready"), null, 50));
    db.exec(
        "CREATE INDEX bench_ready_created_idx ON "
            + T
            + " (created_at, work_id) WHERE state = 'ready'",
        "ANALYZE " + T);
    try {
      time(
          rows,
          mix,
          "list-ready-with-partial-index",
          () -> admin.list(WorkFilter.all().state("ready"), null, 50));
    } finally {
      db.exec("DROP INDEX " + RelayBench.SCHEMA + ".bench_ready_created_idx");
    }
  }

  private void time(int rows, String mix, String what, Runnable call) {
    for (int i = 0; i < WARM_UPS; i++) {
      call.run();
    }
    long[] nanos = new long[CALLS];
    for (int i = 0; i < CALLS; i++) {
      long t0 = System.nanoTime();
      call.run();
      nanos[i] = System.nanoTime() - t0;
    }
    Arrays.sort(nanos);
    record(rows, mix, what, nanos[CALLS / 2] / 1e6);
  }

  private void record(int rows, String mix, String what, double millis) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("rows", rows);
    p.put("mix", mix);
    p.put("read", what);
    report.add(new Scenario("console-overview", "relay", p, "ms")).add(millis);
  }
}
