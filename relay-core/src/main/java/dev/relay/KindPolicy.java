package dev.relay;

import java.time.Duration;
import java.util.Objects;

/**
 * How one kind of work is retried and bounded. Registered by the workers in the {@code kind} table
 * at {@link Relay#start()}, so tools apply the same policy the workers use. Immutable; each {@code
 * with} method returns a copy. Ranges are checked by {@link Relay.Builder#build()}.
 *
 * <pre>{@code
 * KindPolicy mail = KindPolicy.DEFAULT
 *     .withBackoff(Duration.ofSeconds(2), Duration.ofMinutes(10))
 *     .withMaxAttempts(8)
 *     .withDedupHorizon(Duration.ofHours(24))      // the provider keeps idempotency keys 24 h
 *     .withMaxElapsed(Duration.ofHours(12));       // so never retry later than that
 * }</pre>
 *
 * @param backoffBase the first retry's backoff ceiling; it doubles per attempt (full jitter: each
 *     delay is uniform between zero and the ceiling)
 * @param backoffCap the largest backoff ceiling
 * @param maxAttempts attempts allowed (also capped by the work's own {@code maxAttempts})
 * @param maxElapsed the retry window, from the first attempt: no retry is scheduled past it
 * @param maxRunTime how long one attempt may run, independent of the lease: while the handler runs
 *     its lease is renewed by heartbeats (every {@link Relay.Builder#renewInterval}), so an attempt
 *     may run far longer than one lease. Past {@code maxRunTime} the handler is interrupted ({@link
 *     Claim.StopReason#TIMED_OUT}) and its claim is no longer renewed: it is left to its lease,
 *     after which another worker takes the work. Stored in the {@code kind} table's {@code
 *     handler_timeout} column
 * @param dedupHorizon how long the receiver remembers a work ID ({@link Duration#ZERO}: it does not
 *     deduplicate). With {@link UnknownOutcomePolicy#retry()} the retry window may not exceed it
 * @param unknownOutcome what an attempt whose effect is unknown gets
 * @param limits global concurrency and rate limits of the kind, stored in the {@code limiter} table
 *     at start and enforced by every worker's claim ({@link FlowLimits#NONE}: none)
 * @param maxSnoozes how many times one item may {@linkplain Outcome#snooze snooze} (0-{@value
 *     #MAX_SNOOZES_LIMIT}) without spending an attempt; a snooze past it counts as an ordinary
 *     retry (error kind {@code snooze_limit}). Stored in the {@code kind} table's {@code
 *     max_snoozes}
 */
public record KindPolicy(
    Duration backoffBase,
    Duration backoffCap,
    int maxAttempts,
    Duration maxElapsed,
    Duration maxRunTime,
    Duration dedupHorizon,
    UnknownOutcomePolicy unknownOutcome,
    FlowLimits limits,
    int maxSnoozes) {

  /** Default first backoff ceiling: 1 s. */
  public static final Duration DEFAULT_BACKOFF_BASE = Duration.ofSeconds(1);

  /** Default largest backoff ceiling: 5 min. */
  public static final Duration DEFAULT_BACKOFF_CAP = Duration.ofMinutes(5);

  /** Default attempts: 25 (the work's own default cap). */
  public static final int DEFAULT_MAX_ATTEMPTS = 25;

  /** Default retry window: 24 h. */
  public static final Duration DEFAULT_MAX_ELAPSED = Duration.ofHours(24);

  /**
   * Default longest run of one attempt: 1 h. A handler that may run longer needs a larger value; a
   * crashed worker is still noticed after about one lease, because the lease is renewed only while
   * the worker is alive.
   */
  public static final Duration DEFAULT_MAX_RUN_TIME = Duration.ofHours(1);

  /** Default receiver deduplication horizon: 24 h (a common provider idempotency-key retention). */
  public static final Duration DEFAULT_DEDUP_HORIZON = Duration.ofHours(24);

  /**
   * Default snoozes per item: 100. With a one-minute Retry-After that is over an hour and a half of
   * "not now" before attempts are spent.
   */
  public static final int DEFAULT_MAX_SNOOZES = 100;

  /** Most snoozes a policy may allow per item. */
  public static final int MAX_SNOOZES_LIMIT = 100_000;

  /** Most attempts a policy may allow. */
  public static final int MAX_ATTEMPTS_LIMIT = 10_000;

  /**
   * The defaults: backoff 1 s doubling to 5 min, 25 attempts within 24 h, a run time of at most 1 h
   * per attempt, a 24 h receiver horizon, retry on an unknown outcome, and 100 snoozes per item.
   */
  public static final KindPolicy DEFAULT =
      new KindPolicy(
          DEFAULT_BACKOFF_BASE,
          DEFAULT_BACKOFF_CAP,
          DEFAULT_MAX_ATTEMPTS,
          DEFAULT_MAX_ELAPSED,
          DEFAULT_MAX_RUN_TIME,
          DEFAULT_DEDUP_HORIZON,
          UnknownOutcomePolicy.retry(),
          FlowLimits.NONE,
          DEFAULT_MAX_SNOOZES);

  /** Requires every setting. */
  public KindPolicy {
    Objects.requireNonNull(maxRunTime, "maxRunTime");
    Objects.requireNonNull(backoffBase, "backoffBase");
    Objects.requireNonNull(backoffCap, "backoffCap");
    Objects.requireNonNull(maxElapsed, "maxElapsed");
    Objects.requireNonNull(dedupHorizon, "dedupHorizon");
    Objects.requireNonNull(unknownOutcome, "unknownOutcome");
    Objects.requireNonNull(limits, "limits");
  }

  /** A policy without flow limits. */
  public KindPolicy(
      Duration backoffBase,
      Duration backoffCap,
      int maxAttempts,
      Duration maxElapsed,
      Duration maxRunTime,
      Duration dedupHorizon,
      UnknownOutcomePolicy unknownOutcome) {
    this(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        FlowLimits.NONE,
        DEFAULT_MAX_SNOOZES);
  }

  /** A policy with {@link #DEFAULT_MAX_SNOOZES} snoozes per item. */
  public KindPolicy(
      Duration backoffBase,
      Duration backoffCap,
      int maxAttempts,
      Duration maxElapsed,
      Duration maxRunTime,
      Duration dedupHorizon,
      UnknownOutcomePolicy unknownOutcome,
      FlowLimits limits) {
    this(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        DEFAULT_MAX_SNOOZES);
  }

  /** A copy with backoff ceilings starting at {@code base}, doubling, capped at {@code cap}. */
  public KindPolicy withBackoff(Duration base, Duration cap) {
    return new KindPolicy(
        base,
        cap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /** A copy allowing {@code n} attempts. */
  public KindPolicy withMaxAttempts(int n) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        n,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /** A copy with a retry window of {@code window} from the first attempt. */
  public KindPolicy withMaxElapsed(Duration window) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        window,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /**
   * A copy whose attempts may run for {@code limit} (1 ms-30 days), however long the lease: the
   * lease is renewed while the handler runs, up to this limit.
   */
  public KindPolicy withMaxRunTime(Duration limit) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        limit,
        dedupHorizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /** A copy whose receiver remembers work IDs for {@code horizon}. */
  public KindPolicy withDedupHorizon(Duration horizon) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        horizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /** A copy with {@code policy} for attempts whose effect is unknown. */
  public KindPolicy withUnknownOutcome(UnknownOutcomePolicy policy) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        policy,
        limits,
        maxSnoozes);
  }

  /**
   * A copy allowing at most {@code n} (1-1,000,000) live claims of this kind across every worker.
   * The kind is then claimed under its limiter row's lock and gets no prefetch beyond the limit.
   */
  public KindPolicy withMaxRunning(int n) {
    return withLimits(
        new FlowLimits(n, limits.maxRunningPerGroup(), limits.rateLimit(), limits.rateInterval()));
  }

  /**
   * A copy allowing at most {@code n} (1-1,000,000) live claims of this kind per {@linkplain
   * Work#group group} across every worker (work without a group forms the group {@code ""}).
   */
  public KindPolicy withMaxRunningPerGroup(int n) {
    return withLimits(
        new FlowLimits(limits.maxRunning(), n, limits.rateLimit(), limits.rateInterval()));
  }

  /**
   * A copy allowing at most {@code n} (1-1,000,000) claims of this kind within any {@code interval}
   * (1 s-1 day) across every worker, a sliding window on the database clock. A claim counts from
   * the moment it is made, whatever becomes of it (released or reclaimed claims count).
   */
  public KindPolicy withRateLimit(int n, Duration interval) {
    return withLimits(
        new FlowLimits(limits.maxRunning(), limits.maxRunningPerGroup(), n, interval));
  }

  /** A copy with {@code limits} ({@link FlowLimits#NONE}: none). */
  public KindPolicy withLimits(FlowLimits limits) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        maxSnoozes);
  }

  /**
   * A copy allowing each item {@code n} (0-{@value #MAX_SNOOZES_LIMIT}) {@linkplain Outcome#snooze
   * snoozes} before a snooze counts as an ordinary retry.
   */
  public KindPolicy withMaxSnoozes(int n) {
    return new KindPolicy(
        backoffBase,
        backoffCap,
        maxAttempts,
        maxElapsed,
        maxRunTime,
        dedupHorizon,
        unknownOutcome,
        limits,
        n);
  }
}
