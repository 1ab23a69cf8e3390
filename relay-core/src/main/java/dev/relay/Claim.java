package dev.relay;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * A handler's view of one claimed attempt: the work, the authority this worker holds over it (the
 * claim generation and lease), and a stop signal.
 *
 * <p>The claim is authority on the database, not over the world: when the lease expires another
 * worker may take the work with a higher generation while this attempt's call is still in flight.
 * Relay then refuses this attempt's outcome, but it cannot recall what the call already did; the
 * receiver's deduplication by {@link #workId()} is what makes the repeat safe.
 *
 * <p>Implemented by Relay; thread-safe.
 */
public interface Claim {
  /** Why a handler is asked to stop. */
  enum StopReason {
    /** An operator asked to cancel the work ({@link Relay#cancel}); seen at a lease renewal. */
    CANCEL_REQUESTED,
    /**
     * The claim is lost: a renewal was refused (the claim is stale), or a full lease passed on this
     * worker's monotonic clock since the last renewal that succeeded (for example while the worker
     * was cut off from PostgreSQL, where no refusal can arrive). Another worker may own the work
     * now, and this attempt's outcome will be refused unless the lease turns out to be still held.
     */
    LEASE_LOST,
    /**
     * The handler ran past its kind's {@link KindPolicy#maxRunTime()}: it is interrupted and its
     * lease is no longer renewed, so another worker takes the work when the lease ends.
     */
    TIMED_OUT,
    /**
     * The worker is shutting down and the handler was still running when {@link Relay#close()}'s
     * grace period ended: it is interrupted and its lease is no longer renewed. A handler that
     * returns promptly has its attempt recorded with error kind {@code shutdown} (effect unknown,
     * under the kind's unknown-outcome policy; a retry is due at once, without backoff); one that
     * does not is left to its lease, and its outcome is not recorded.
     */
    SHUTDOWN
  }

  /** The stable work ID; pass it to the receiver as the deduplication key. */
  String workId();

  /** The kind. */
  String kind();

  /** The queue. */
  String queue();

  /**
   * The payload as JSON text in PostgreSQL's jsonb rendering: equal as JSON to what was enqueued,
   * but not byte for byte (keys reordered, whitespace normalised, a repeated key kept once).
   */
  String payload();

  /** The claim generation: rises with every claim of this work; names this attempt's authority. */
  long generation();

  /** The attempt number, counting this one (1 for the first). */
  int attempt();

  /** The attempt cap stored with the work. */
  int maxAttempts();

  /** The business deadline, or {@code null}. */
  Instant deadline();

  /** When the lease ends on the database clock, as last claimed or renewed. */
  Instant leaseUntil();

  /**
   * How long this worker may still assume it holds the lease, measured on a monotonic local clock
   * from the moment the claim (or the last successful renewal) was sent; zero once the claim is
   * known lost. While the handler runs the lease keeper extends it, so this is <em>not</em> the
   * bound for a call (see {@link #runTimeRemaining()}); it says how long the current authority
   * lasts if no further renewal succeeds. Never negative. The default derives it from {@link
   * #leaseUntil()} and this machine's wall clock, which clock skew distorts; the runtime's claims
   * override it.
   */
  default Duration leaseRemaining() {
    Duration d = Duration.between(Instant.now(), leaseUntil());
    return d.isNegative() ? Duration.ZERO : d;
  }

  /**
   * How long this attempt may still run: until its kind's {@link KindPolicy#maxRunTime()} (counted
   * on a monotonic local clock from the handler's start) or the business {@link #deadline()},
   * whichever comes first. Never negative. This, not {@link #leaseRemaining()}, is the bound for a
   * call the handler makes: the lease is renewed while the handler runs, so a call may outlast many
   * leases. The runtime's claims estimate the deadline against the database clock (the lease's
   * start plus monotonic time since); the default here has no run-time limit to go on and returns
   * {@link #leaseRemaining()}, or the time to the deadline on this machine's wall clock if that is
   * shorter.
   */
  default Duration runTimeRemaining() {
    Duration left = leaseRemaining();
    if (deadline() != null) {
      Duration toDeadline = Duration.between(Instant.now(), deadline());
      if (toDeadline.compareTo(left) < 0) {
        left = toDeadline;
      }
    }
    return left.isNegative() ? Duration.ZERO : left;
  }

  /**
   * Whether this worker knows its claim is lost (see {@link StopReason#LEASE_LOST}), whatever stop
   * reason arrived first. Once true it stays true; {@link #leaseRemaining()} is then zero. The
   * default derives it from {@link #stopReason()}; the runtime's claims override it.
   */
  default boolean isLeaseLost() {
    return stopReason() == StopReason.LEASE_LOST;
  }

  /** When the work was enqueued (database clock). */
  Instant createdAt();

  /** When the work was first claimed (database clock), the start of its retry window. */
  Instant firstAttemptAt();

  /**
   * Whether this claim took the work over from a claim whose lease expired: that earlier attempt's
   * effect is unknown.
   */
  boolean reclaimed();

  /** The ordering key, or {@code null} for unordered work. */
  String orderingKey();

  /** This item's sequence within its ordering key, or {@code null} for unordered work. */
  Long sequence();

  /**
   * The highest lower sequence of this key that was delivered (is {@code done}), or {@code null} if
   * none was. It can be lower than {@code sequence() - 1} when items in between were cancelled: a
   * deliberate gap, not a lost message. A strict-history receiver holds this item until it has
   * applied that sequence (see {@code dev.relay.receiver.KeyedHistory}).
   */
  Long previousDeliveredSequence();

  /**
   * The producer's trace context, stored with the work at enqueue ({@link RelayTracing}, {@link
   * Work#traceContext(Map)}): W3C Trace Context carrier fields such as {@code traceparent}; empty
   * when the work was enqueued without one.
   */
  default Map<String, String> traceContext() {
    return Map.of();
  }

  /**
   * The trace context a call made by this attempt should carry ({@code traceparent}, {@code
   * tracestate}), as Relay's transports send it: the attempt span's while the handler runs under a
   * configured {@link RelayTracing}, else the stored {@link #traceContext()} (so that the receiver
   * still joins the producer's trace); empty when there is neither.
   */
  default Map<String, String> callTraceContext() {
    return traceContext();
  }

  /** The ID of the worker holding this claim. */
  String workerId();

  /** Whether an operator asked to cancel this work (seen at a lease renewal). */
  boolean isCancelRequested();

  /**
   * Whether the handler should stop: cancel requested, lease lost, past its max run time, or the
   * worker shutting down after its grace period.
   */
  boolean shouldStop();

  /** The first reason to stop that arrived, or {@code null}. */
  StopReason stopReason();

  /**
   * Runs {@code action} once when a stop reason arrives (at once if one already has), for example
   * to abort an HTTP call. The action runs on a Relay thread: it must be fast and must not throw
   * (exceptions are caught and logged).
   */
  void onStop(Runnable action);
}
