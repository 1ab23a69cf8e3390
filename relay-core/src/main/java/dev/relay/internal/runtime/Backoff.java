package dev.relay.internal.runtime;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter, the one place it is written. A handler's retry ({@link #delay})
 * waits a uniformly random time between zero and {@code min(cap, base * 2^(n-1))}: full jitter
 * spreads the retries of many workers that failed together (a receiver outage) instead of having
 * them return in waves. Relay's own pauses after a failed database call ({@link #pause}: the
 * claimer, the completer) wait between half that ceiling and all of it, so that a worker keeps some
 * distance from a database that is struggling while still not returning in step with others.
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

  /**
   * A pause after the {@code failures}-th consecutive failure (1-based) of one of Relay's own
   * database calls, in {@code [ceiling / 2, ceiling]} with the ceiling {@code min(cap, base *
   * 2^failures)}.
   */
  static Duration pause(Duration base, Duration cap, int failures) {
    long ceiling = ceiling(base, cap, failures + 1).toNanos();
    return Duration.ofNanos(ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1));
  }
}
