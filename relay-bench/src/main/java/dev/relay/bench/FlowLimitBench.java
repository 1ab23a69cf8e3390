package dev.relay.bench;

import dev.relay.ManualClaims;
import dev.relay.Outbox;
import dev.relay.Work;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The claim cost of a flow-limited kind against an unlimited one (issue 17), in the same run and on
 * the same table: the same backlog in three kinds, one unlimited, one with {@code max_running}, one
 * with a rate limit, each limit far above what the bench claims, so the numbers show what the
 * mechanism costs (lock the limiter row, count in a later statement, claim, log the claim) and not
 * a limit that binds. Claims of the three kinds alternate batch by batch, so all three see the same
 * load and the same table state; each claimed batch is completed (not timed) before the next.
 * Reported: median and p90 latency of one claim transaction of {@code --batch} rows, per kind.
 */
final class FlowLimitBench {
  static final String UNLIMITED = "bench.flow.unlimited";
  static final String MAX_RUNNING = "bench.flow.max-running";
  static final String RATE = "bench.flow.rate";

  /** Claims timed per kind and run. */
  static final int CLAIMS = 400;

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;

  FlowLimitBench(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
  }

  void claimCost(RelayBench relay) throws Exception {
    int batch = Math.min(sizes.batch(), 100);
    int claims = Math.max(10, Math.min(CLAIMS, sizes.jobs() / batch));
    Map<String, String> configs =
        Map.of(
            UNLIMITED, "none",
            MAX_RUNNING, "max_running=1000000",
            RATE, "rate_limit=1000000/1d");
    List<String> kinds = List.of(UNLIMITED, MAX_RUNNING, RATE);
    Map<String, Scenario[]> scenarios = new LinkedHashMap<>();
    for (String kind : kinds) {
      Map<String, Object> p =
          RelayBench.params("limits", configs.get(kind), "batch", batch, "claims", claims);
      scenarios.put(
          kind,
          new Scenario[] {
            report.add(new Scenario("claim-p50", "relay", p, "ms")),
            report.add(new Scenario("claim-p90", "relay", p, "ms"))
          });
    }
    ManualClaims manual = ManualClaims.forSchema(RelayBench.SCHEMA);
    Outbox outbox = Outbox.builder().schema(RelayBench.SCHEMA).build();
    for (int run = 0; run < sizes.runs(); run++) {
      relay.truncate();
      db.exec(
          "TRUNCATE " + RelayBench.SCHEMA + ".claim_log",
          "DELETE FROM " + RelayBench.SCHEMA + ".limiter WHERE kind LIKE 'bench.flow.%'",
          "INSERT INTO "
              + RelayBench.SCHEMA
              + ".limiter (kind, max_running) VALUES ('"
              + MAX_RUNNING
              + "', 1000000)",
          "INSERT INTO "
              + RelayBench.SCHEMA
              + ".limiter (kind, rate_limit, rate_interval) VALUES ('"
              + RATE
              + "', 1000000, interval '1 day')");
      fill(outbox, kinds, claims * batch, run);
      db.exec("VACUUM ANALYZE " + RelayBench.SCHEMA + ".outbox");
      Map<String, long[]> nanos = new HashMap<>();
      for (String kind : kinds) {
        nanos.put(kind, new long[claims]);
      }
      try (Connection c = db.pool().getConnection()) {
        for (int i = 0; i < claims; i++) {
          for (String kind : kinds) {
            long t0 = System.nanoTime();
            ManualClaims.Batch b =
                manual.claim(
                    c,
                    "bench-flow",
                    List.of("default"),
                    List.of(kind),
                    batch,
                    Duration.ofMinutes(5));
            nanos.get(kind)[i] = System.nanoTime() - t0;
            if (b.claimed().size() != batch) {
              throw new IllegalStateException(
                  kind + ": claimed " + b.claimed().size() + " of " + batch + " (limit binding?)");
            }
            done(c, b);
          }
        }
      }
      for (String kind : kinds) {
        Percentiles pct = new Percentiles(nanos.get(kind));
        scenarios.get(kind)[0].add(pct.millis(50));
        scenarios.get(kind)[1].add(pct.millis(90));
      }
    }
  }

  /**
   * Ends a claimed batch as done, untimed: what the completer's batch does (the rows end done in
   * the history table, so the work table keeps only the backlog), without its guard, which the
   * bench need not measure here (nothing else claims these kinds). Two statements: the update to
   * done, then the move, which copies the row whole (the history table has the work table's columns
   * in its order).
   */
  private static void done(Connection c, ManualClaims.Batch b) throws SQLException {
    String[] ids = b.claimed().stream().map(h -> h.workId()).toArray(String[]::new);
    String s = RelayBench.SCHEMA;
    for (String sql :
        new String[] {
          "UPDATE "
              + s
              + ".outbox SET state = 'done', claimed_by = NULL, lease_until = NULL,"
              + " completed_at = clock_timestamp() WHERE work_id = ANY (?)",
          "WITH moved AS (DELETE FROM "
              + s
              + ".outbox WHERE work_id = ANY (?) RETURNING *) INSERT INTO "
              + s
              + ".work_history SELECT * FROM moved"
        }) {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setArray(1, c.createArrayOf("text", ids));
        ps.executeUpdate();
      }
    }
  }

  /** {@code perKind} ready rows of each kind, interleaved, enqueued 1,000 per transaction. */
  private void fill(Outbox outbox, List<String> kinds, int perKind, int run) throws SQLException {
    try (Connection c = db.pool().getConnection()) {
      c.setAutoCommit(false);
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < perKind; i++) {
        for (String kind : kinds) {
          works.add(Work.of("flow-" + run + "-" + kind + "-" + i, kind, "{\"n\":" + i + "}"));
          if (works.size() == 1000) {
            outbox.enqueueAll(c, works);
            c.commit();
            works.clear();
          }
        }
      }
      if (!works.isEmpty()) {
        outbox.enqueueAll(c, works);
        c.commit();
      }
    }
  }
}
