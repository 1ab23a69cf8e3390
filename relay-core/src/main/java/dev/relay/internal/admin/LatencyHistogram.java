package dev.relay.internal.admin;

import java.time.Duration;

/**
 * The rollup's latency summary: counts in {@link #BINS} bins on a fixed log scale, four per
 * doubling. Bin 0 holds times under 1 ms; bin {@code b >= 1} holds {@code [2^((b-1)/4), 2^(b/4))}
 * ms; the last bin also holds everything above (about 35 days). Histograms add bin by bin, so a
 * percentile over many buckets is read from their sum. A bin's geometric middle is within {@link
 * #RELATIVE_ERROR} of every value in it.
 */
public final class LatencyHistogram {
  /** The number of bins (the length of {@code rollup.latency}). */
  public static final int BINS = 128;

  /** Bins per doubling. */
  static final int PER_DOUBLING = 4;

  /** The largest relative distance of a bin's geometric middle from a value in it: 2^(1/8) - 1. */
  public static final double RELATIVE_ERROR = Math.pow(2, 1.0 / (2 * PER_DOUBLING)) - 1;

  private LatencyHistogram() {}

  /** The bin of a time of {@code micros} microseconds. */
  public static int bin(long micros) {
    if (micros < 1_000) {
      return 0;
    }
    double log2ms = Math.log(micros / 1_000.0) / Math.log(2);
    return (int) Math.min(BINS - 1, 1 + Math.floor(PER_DOUBLING * log2ms));
  }

  /** The reported time of bin {@code b}: its geometric middle (0.5 ms for bin 0). */
  public static Duration middle(int b) {
    if (b == 0) {
      return Duration.ofNanos(500_000);
    }
    if (b == BINS - 1) {
      // The top bin is open: report its lower end, a lower bound.
      return nanos(Math.pow(2, (double) (b - 1) / PER_DOUBLING));
    }
    return nanos(Math.pow(2, (b - 0.5) / PER_DOUBLING));
  }

  private static Duration nanos(double millis) {
    return Duration.ofNanos(Math.round(millis * 1_000_000));
  }

  /**
   * The nearest-rank {@code q} quantile of {@code counts} (the smallest bin at which at least
   * {@code ceil(q * n)} items lie at or below), as its bin's middle; {@code null} when empty.
   */
  public static Duration quantile(long[] counts, double q) {
    long n = 0;
    for (long c : counts) {
      n += c;
    }
    if (n == 0) {
      return null;
    }
    long rank = Math.max(1, (long) Math.ceil(q * n));
    long seen = 0;
    for (int b = 0; b < counts.length; b++) {
      seen += counts[b];
      if (seen >= rank) {
        return middle(b);
      }
    }
    return middle(counts.length - 1);
  }
}
