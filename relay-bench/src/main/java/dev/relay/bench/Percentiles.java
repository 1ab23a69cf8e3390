package dev.relay.bench;

import java.util.Arrays;

/** Nearest-rank percentiles of latencies in nanoseconds, reported in milliseconds. */
final class Percentiles {
  private final long[] sorted;

  Percentiles(long[] nanos) {
    this.sorted = nanos.clone();
    Arrays.sort(sorted);
  }

  double millis(double percentile) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(percentile / 100.0 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))] / 1e6;
  }
}
