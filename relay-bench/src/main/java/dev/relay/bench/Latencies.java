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
  private final long[] claimed;
  private final long[] started;
  private final long[] completed;

  Latencies(int total) {
    committed = new long[total];
    claimed = new long[total];
    started = new long[total];
    completed = new long[total];
  }

  /** The claim transaction that took item {@code i} returned (a Relay event); 0 if not seen. */
  void claimed(int i) {
    claimed[i] = System.nanoTime();
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
    return deltas(committed, to);
  }

  private static long[] deltas(long[] from, long[] to) {
    long[] d = new long[from.length];
    for (int i = 0; i < d.length; i++) {
      d[i] = Math.max(0, to[i] - from[i]);
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

  /**
   * Pickup split in two, for Relay: commit to the claim transaction's return (the wake-up, the
   * claim and its commit) and from there to the handler's start (buffer, dispatch, thread
   * hand-off).
   */
  static List<Scenario> claimScenarios(Report report, String system, Map<String, Object> params) {
    return List.of(
        report.add(new Scenario("steady-claimed-p50", system, params, "ms")),
        report.add(new Scenario("steady-claimed-to-start-p50", system, params, "ms")));
  }

  static void recordClaims(List<Scenario> s, Latencies lat) {
    s.get(0).add(new Percentiles(lat.deltas(lat.claimed)).millis(50));
    s.get(1).add(new Percentiles(deltas(lat.claimed, lat.started)).millis(50));
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
