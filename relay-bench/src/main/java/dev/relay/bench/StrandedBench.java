package dev.relay.bench;

import dev.relay.Relay;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * Work stranded by a {@code kill -9} under a backlog: a {@link WorkerProcess} drains a backlog for
 * a few seconds and is killed; what it had claimed and not finished (still {@code running} under
 * its name) waits for its lease, the rest was never claimed and another worker takes it at once.
 * The target: at most what the worker could start in about a second (its handler slots plus the
 * claims it starts in that time) is stranded. Measured with a no-op handler (a deep buffer pays)
 * and with a handler of 10 ms (a buffer beyond the slots only strands work).
 */
final class StrandedBench {
  /** How long the worker drains before it is killed. */
  static final long RUN_MILLIS = 3_000;

  private final BenchDb db;
  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  StrandedBench(BenchDb db, RelayBench relay, Sizes sizes, Report report) {
    this.db = db;
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  void run() throws Exception {
    for (int handlerMillis : new int[] {0, 10}) {
      // enough backlog for the whole run either way: no-op drains ~10k/s, 10 ms handlers 800/s
      int jobs = handlerMillis == 0 ? sizes.jobs() : Math.min(sizes.jobs(), 20_000);
      Map<String, Object> p =
          RelayBench.params(
              "jobs",
              jobs,
              "handler_ms",
              handlerMillis,
              "concurrency",
              Relay.DEFAULT_CONCURRENCY,
              "killed_after_ms",
              RUN_MILLIS);
      Scenario stranded = report.add(new Scenario("stranded-after-kill", "relay", p, "claims"));
      Scenario bound = report.add(new Scenario("stranded-bound", "relay", p, "claims"));
      Scenario ratio = report.add(new Scenario("stranded-vs-bound", "relay", p, "ratio"));
      for (int run = 0; run < sizes.runs(); run++) {
        relay.truncate();
        relay.vacuum();
        relay.preload(jobs);
        long[] r = killedRun(handlerMillis, run);
        stranded.add(r[0]);
        bound.add(r[1]);
        ratio.add((double) r[0] / r[1]);
      }
    }
    relay.truncate();
    relay.vacuum();
  }

  /** One run: {stranded claims, bound (slots + completions in the last second)}. */
  private long[] killedRun(int handlerMillis, int run) throws Exception {
    String worker = "stranded-" + run + "-" + handlerMillis;
    Path log = Files.createTempFile("relay-bench-worker", ".log");
    // The work view: completed rows move to the history table.
    String done = "SELECT count(*) FROM " + RelayBench.SCHEMA + ".work WHERE state = 'done'";
    try (Processes processes = new Processes()) {
      Process p =
          processes.start(
              List.of(db.url(), RelayBench.SCHEMA, worker, Integer.toString(handlerMillis)), log);
      // Completions sampled every 100 ms; the last second's give the rate work starts at.
      Deque<long[]> samples = new ArrayDeque<>();
      long first = 0;
      while (true) {
        long now = System.nanoTime();
        long n = db.queryLong(done);
        samples.addLast(new long[] {now, n});
        while (now - samples.peekFirst()[0] > 1_000_000_000L) {
          samples.removeFirst();
        }
        if (first == 0 && n > 0) {
          first = now;
        }
        if (first != 0 && now - first >= RUN_MILLIS * 1_000_000L) {
          break;
        }
        if (!p.isAlive()) {
          throw new IllegalStateException("the worker process ended on its own; see " + log);
        }
        Thread.sleep(100);
      }
      long startedLastSecond = samples.peekLast()[1] - samples.peekFirst()[1];
      Processes.kill(p);
      long held =
          db.queryLong(
              "SELECT count(*) FROM "
                  + RelayBench.SCHEMA
                  + ".outbox WHERE state = 'running' AND claimed_by = '"
                  + worker
                  + "'");
      Files.deleteIfExists(log); // kept when the run failed: the worker's errors are in it
      return new long[] {held, Relay.DEFAULT_CONCURRENCY + startedLastSecond};
    }
  }
}
