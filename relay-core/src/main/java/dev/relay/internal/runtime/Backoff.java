package dev.relay.internal.runtime;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with full jitter: the n-th retry waits a uniformly random time between zero
 * and {@code min(cap, base * 2^(n-1))}. Full jitter spreads the retries of many workers that failed
 * together (a receiver outage) instead of having them return in waves.
 */
final class Backoff {
  private Backoff() {}

  /** The ceiling for the retry after attempt {@code attempt} (1-based). */
  static Duration ceiling(Duration base, Duration cap, int attempt) {
    long b = base.toNanos();
    long c = cap.toNanos();
    int doublings = Math.max(0, attempt - 1);
    if (doublings >= 62 || b > (c >> doublings)) {
      return cap; // base * 2^doublings would pass the cap (or overflow)
    }
    return Duration.ofNanos(b << doublings);
  }

  /** A random delay for the retry after attempt {@code attempt}, in {@code [0, ceiling]}. */
  static Duration delay(Duration base, Duration cap, int attempt) {
    long ceiling = ceiling(base, cap, attempt).toNanos();
    return Duration.ofNanos(ThreadLocalRandom.current().nextLong(ceiling + 1));
  }
}
