package dev.relay.bench;

import java.util.List;
import java.util.Map;

/**
 * Commit, handler-start and completion times of one steady-load run, by item index. Pickup latency
 * is commit to handler start; completion latency is commit to the recorded outcome. A handler that
 * starts before the producer thread has noted its commit counts as 0.
 */
final class Latencies {
  private final long[] committed;
  private final long[] started;
  private final long[] completed;

  Latencies(int total) {
    committed = new long[total];
    started = new long[total];
    completed = new long[total];
  }

  void committed(int i) {
    committed[i] = System.nanoTime();
  }

  void started(int i) {
    started[i] = System.nanoTime();
  }

  void completed(int i) {
    completed[i] = System.nanoTime();
  }

  private long[] deltas(long[] to) {
    long[] d = new long[committed.length];
    for (int i = 0; i < d.length; i++) {
      d[i] = Math.max(0, to[i] - committed[i]);
    }
    return d;
  }

  static List<Scenario> scenarios(Report report, String system, Map<String, Object> params) {
    return List.of(
        report.add(new Scenario("steady-pickup-p50", system, params, "ms")),
        report.add(new Scenario("steady-pickup-p95", system, params, "ms")),
        report.add(new Scenario("steady-pickup-p99", system, params, "ms")),
        report.add(new Scenario("steady-completion-p50", system, params, "ms")),
        report.add(new Scenario("steady-completion-p99", system, params, "ms")));
  }

  static void record(List<Scenario> s, Latencies lat) {
    Percentiles pickup = new Percentiles(lat.deltas(lat.started));
    Percentiles completion = new Percentiles(lat.deltas(lat.completed));
    s.get(0).add(pickup.millis(50));
    s.get(1).add(pickup.millis(95));
    s.get(2).add(pickup.millis(99));
    s.get(3).add(completion.millis(50));
    s.get(4).add(completion.millis(99));
  }
}
