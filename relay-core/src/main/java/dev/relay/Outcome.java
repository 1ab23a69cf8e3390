package dev.relay;

import java.time.Duration;
import java.util.Objects;

/**
 * What a {@link Handler} decided about one attempt. Failure is a decision, not an exception type:
 * return {@link #done}, {@link #retry}, {@link #snooze}, {@link #fail} or {@link #cancel}. A
 * handler that throws, or runs past its timeout, has not decided anything: Relay treats that as
 * "effect unknown" and applies the kind's {@link UnknownOutcomePolicy}, never as "did not happen".
 *
 * <p>Every outcome is recorded with a guarded write: if this worker's claim has gone stale (its
 * lease expired, another generation took over), the outcome is refused and counted, and the newer
 * owner's outcome stands.
 *
 * <p>{@link Effect} is the evidence an outcome carries about the receiver. Say {@link
 * Effect#NOT_DELIVERED} only when you know the receiver did not act (it refused the request, or the
 * call was never sent); the default is {@link Effect#UNKNOWN}, which is never wrong.
 */
public sealed interface Outcome
    permits Outcome.Done, Outcome.Retry, Outcome.Snooze, Outcome.Fail, Outcome.Cancel {

  /** Evidence of the receiver-side effect of an attempt that did not end in {@code done}. */
  enum Effect {
    /** Known not to have reached the receiver (refused, or never sent). */
    NOT_DELIVERED,
    /** May or may not have had its effect: a timeout, a lost reply, an unclear error. */
    UNKNOWN
  }

  /** Done, with no receiver reference or result, meaning {@link Milestone#ACCEPTED}. */
  static Done done() {
    return new Done(null, null, Milestone.ACCEPTED);
  }

  /** Done, with the receiver's reference for the effect (a message ID, a charge ID). */
  static Done done(String receiverRef) {
    return new Done(receiverRef, null, Milestone.ACCEPTED);
  }

  /**
   * Done, with the receiver's reference, a result to keep (JSON text, or {@code null}) and what the
   * receiver's acceptance means.
   */
  static Done done(String receiverRef, String resultJson, Milestone milestone) {
    return new Done(receiverRef, resultJson, milestone);
  }

  /**
   * Try again later (the kind's backoff), effect unknown. Counts an attempt; when the kind's
   * attempts or retry window are used up the work becomes {@code failed} with this reason.
   */
  static Retry retry(String reason) {
    return new Retry(null, reason, Effect.UNKNOWN);
  }

  /** Try again later, with what is known about the effect of this attempt. */
  static Retry retry(String reason, Effect effect) {
    return new Retry(null, reason, effect);
  }

  /**
   * Try again after {@code delay} without spending an attempt, because this attempt is known not to
   * have had its effect (the receiver said "not now": rate limited, busy, outside its hours). Only
   * return it when you know the effect did not happen; when in doubt, return {@link #retry}.
   *
   * <p>Each item may snooze at most its kind's {@link KindPolicy#maxSnoozes()} times; a snooze past
   * that counts as an ordinary retry (error kind {@code snooze_limit}, one attempt spent), so the
   * attempt cap and the retry window end a receiver that always says "later". A snooze that would
   * start after the retry window fails the work ({@code retry_window_exhausted}), as a retry would.
   *
   * @param delay how long to wait (not negative)
   */
  static Snooze snooze(Duration delay) {
    return new Snooze(delay, "snoozed");
  }

  /**
   * The receiver asked to be called again after {@code delay} (an HTTP {@code Retry-After}, a
   * broker's back-pressure signal) and did not act on this attempt: a {@link #snooze} with the
   * receiver's words as its reason.
   *
   * @param delay how long the receiver asked to wait (not negative)
   * @param reason what the receiver said, stored as the last error
   */
  static Snooze retryAfter(Duration delay, String reason) {
    return new Snooze(delay, reason);
  }

  /** Failed permanently (kept as {@code failed} for a deliberate redrive), effect unknown. */
  static Fail fail(String reason) {
    return new Fail(reason, Effect.UNKNOWN);
  }

  /** Failed permanently, with what is known about the effect of this attempt. */
  static Fail fail(String reason, Effect effect) {
    return new Fail(reason, effect);
  }

  /**
   * The work should not happen (for example, the handler saw {@link Claim#isCancelRequested()}, or
   * found the intention no longer valid). Recorded as {@code cancelled}; effect unknown.
   */
  static Cancel cancel(String reason) {
    return new Cancel(reason, Effect.UNKNOWN);
  }

  /** Cancelled, with what is known about the effect of this attempt. */
  static Cancel cancel(String reason, Effect effect) {
    return new Cancel(reason, effect);
  }

  /**
   * The receiver accepted the work. Recorded as {@code done} with outcome {@code delivered}, also
   * when a cancel request arrived meanwhile (the effect happened; a cancel cannot undo it).
   *
   * @param receiverRef the receiver's reference for the effect, or {@code null}
   * @param resultJson a result to keep, as JSON text, or {@code null}; text that is not valid JSON
   *     is stored as a JSON string rather than lose the fact that the work was done
   * @param milestone what the acceptance means
   */
  record Done(String receiverRef, String resultJson, Milestone milestone) implements Outcome {
    /** Requires a milestone. */
    public Done {
      Objects.requireNonNull(milestone, "milestone");
    }
  }

  /**
   * Try again: the work goes back to {@code ready}, available after {@code delay} (or the kind's
   * backoff when {@code delay} is {@code null}).
   *
   * @param delay the delay before the next attempt, or {@code null} for the kind's backoff
   * @param reason why, stored as the last error
   * @param effect what is known about the effect of this attempt
   */
  record Retry(Duration delay, String reason, Effect effect) implements Outcome {
    /** Requires an effect and a non-negative delay. */
    public Retry {
      Objects.requireNonNull(effect, "effect");
      if (delay != null && delay.isNegative()) {
        throw new IllegalArgumentException("retry delay is negative: " + delay);
      }
    }

    /** A copy that waits {@code delay} (not negative) instead of the kind's backoff. */
    public Retry after(Duration delay) {
      return new Retry(Objects.requireNonNull(delay, "delay"), reason, effect);
    }
  }

  /**
   * Try again after {@code delay} without spending an attempt: the effect is known not to have
   * happened. Recorded as {@code ready} with the attempt given back, the item's snooze count raised
   * by one, evidence {@code not_delivered}, and ending {@code snoozed} in the attempt history. See
   * {@link Outcome#snooze} for the cap.
   *
   * @param delay the delay before the next attempt
   * @param reason why, stored as the last error
   */
  record Snooze(Duration delay, String reason) implements Outcome {
    /** Requires a non-negative delay. */
    public Snooze {
      Objects.requireNonNull(delay, "delay");
      if (delay.isNegative()) {
        throw new IllegalArgumentException("snooze delay is negative: " + delay);
      }
    }
  }

  /**
   * Failed permanently. Kept as {@code failed} with its reason and evidence; a redrive may run it
   * again deliberately.
   *
   * @param reason why, stored as the last error
   * @param effect what is known about the effect of this attempt
   */
  record Fail(String reason, Effect effect) implements Outcome {
    /** Requires an effect. */
    public Fail {
      Objects.requireNonNull(effect, "effect");
    }
  }

  /**
   * Cancelled: recorded as {@code cancelled}. It recalls nothing that was already sent.
   *
   * @param reason why, stored as the last error
   * @param effect what is known about the effect of this attempt
   */
  record Cancel(String reason, Effect effect) implements Outcome {
    /** Requires an effect. */
    public Cancel {
      Objects.requireNonNull(effect, "effect");
    }
  }
}
