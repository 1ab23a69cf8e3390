package dev.relay;

import java.time.Duration;

/**
 * The global flow limits of one kind, enforced in the database across every worker: at most {@code
 * maxRunning} live claims of the kind, at most {@code maxRunningPerGroup} live claims per
 * {@linkplain Work#group group}, and at most {@code rateLimit} claims within any {@code
 * rateInterval} (a sliding window on the database clock). A live claim is a row running under an
 * unexpired lease, whether its handler runs or it waits in a worker's buffer. Set them through
 * {@link KindPolicy#withMaxRunning}, {@link KindPolicy#withMaxRunningPerGroup} and {@link
 * KindPolicy#withRateLimit}; ranges are checked by {@link Relay.Builder#build()}.
 *
 * <p>Limits count claims, not calls to a receiver: a worker whose lease expired may still be
 * calling while another worker's claim of the same work, or of other work of the kind, starts. See
 * {@code docs/limits.md}.
 *
 * @param maxRunning most live claims of the kind, or {@code null} for no limit
 * @param maxRunningPerGroup most live claims of the kind per group, or {@code null} for no limit
 * @param rateLimit most claims within {@code rateInterval}, or {@code null} for no rate limit
 * @param rateInterval the rate window (at least 1 s), {@code null} exactly when {@code rateLimit}
 *     is
 */
public record FlowLimits(
    Integer maxRunning, Integer maxRunningPerGroup, Integer rateLimit, Duration rateInterval) {

  /** No limits: the kind is claimed by the ordinary claim, with prefetch. */
  public static final FlowLimits NONE = new FlowLimits(null, null, null, null);

  /** Largest value of any limit. */
  public static final int MAX_LIMIT = 1_000_000;

  /** Shortest rate window. */
  public static final Duration MIN_RATE_INTERVAL = Duration.ofSeconds(1);

  /** Longest rate window. */
  public static final Duration MAX_RATE_INTERVAL = Duration.ofDays(1);

  /** Whether any limit is set. */
  public boolean limited() {
    return maxRunning != null || maxRunningPerGroup != null || rateLimit != null;
  }
}
