package dev.relay.internal.runtime;

import dev.relay.Outcome;
import dev.relay.Reconciliation;
import dev.relay.UnknownOutcomePolicy;
import dev.relay.internal.json.JsonText;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.Settlement.Evidence;
import java.time.Duration;
import java.time.Instant;

/**
 * Turns what a handler did into the guarded write that ends its claim. Failure is a decision: a
 * returned outcome is taken at its word; a thrown exception or a timeout is "effect unknown" and
 * goes to the kind's unknown-outcome policy. Retries are bounded by the kind's attempts and retry
 * window (and the work's own attempt cap); exhausted work fails with its last error.
 *
 * <p>A claim stopped by the worker's shutdown ({@link LiveClaim#stoppedForShutdown}) is no
 * exception to the policy: the call may have happened, so the attempt counts and an unknown effect
 * goes to the kind's policy as ever. What differs is the record and the timing: its error kind is
 * {@value #SHUTDOWN}, and a retry without a delay of the handler's own is due at once, not after
 * the backoff, because the failure was this worker's leaving, not the receiver's answer.
 */
final class Decider {

  /** The error kind of an attempt ended by the worker's shutdown. */
  static final String SHUTDOWN = "shutdown";

  private static final int MAX_RESULT_BYTES = 1 << 20;

  private Decider() {}

  /** The write for an outcome the handler returned. */
  static Settlement forOutcome(LiveClaim c, Outcome outcome) {
    if (outcome instanceof Outcome.Done d) {
      return complete(c, d.receiverRef(), d.resultJson(), d.milestone().sql());
    }
    if (outcome instanceof Outcome.Fail f) {
      return new Settlement.Fail(
          c.ref, "permanent", text(f.reason(), "failed"), evidence(f.effect()));
    }
    if (outcome instanceof Outcome.Cancel x) {
      return new Settlement.Cancelled(c.ref, text(x.reason(), "cancelled"), evidence(x.effect()));
    }
    if (outcome instanceof Outcome.Snooze z) {
      return snooze(c, z);
    }
    Outcome.Retry r = (Outcome.Retry) outcome;
    if (c.isCancelRequested()) {
      // The operator's cancel wins over a retry: the work is not attempted again.
      return new Settlement.Cancelled(
          c.ref,
          "cancel requested; the handler asked to retry: " + text(r.reason(), "retry"),
          evidence(r.effect()));
    }
    if (shutDown(c)) {
      return retryOrExhaust(
          c,
          r.delay() == null ? Duration.ZERO : r.delay(),
          SHUTDOWN,
          "the worker shut down; the handler asked to retry: " + text(r.reason(), "retry"),
          evidence(r.effect()));
    }
    return retryOrExhaust(c, r.delay(), "retry", text(r.reason(), "retry"), evidence(r.effect()));
  }

  /**
   * The write for an attempt whose effect is unknown (the handler threw or timed out), under the
   * kind's policy. {@code reconciliation} is the receiver's answer for a reconcile policy.
   */
  static Settlement forUnknown(
      LiveClaim c, Throwable error, boolean timedOut, Reconciliation reconciliation) {
    if (timedOut) {
      return forUnknown(
          c,
          "timeout",
          "handler passed its max run time of " + c.policy.maxRunTime() + ": " + describe(error),
          reconciliation);
    }
    if (shutDown(c)) {
      return forUnknown(
          c,
          SHUTDOWN,
          "the worker shut down while the handler ran; it was interrupted after the shutdown grace: "
              + describe(error),
          reconciliation);
    }
    return forUnknown(c, "exception", describe(error), reconciliation);
  }

  /**
   * Whether a returned outcome must go to the kind's unknown-outcome policy: a retry whose effect
   * is unknown, for a kind that parks or reconciles unknown outcomes. Retrying it as asked would
   * repeat a possibly accepted effect at a receiver the kind says cannot absorb it; a retry the
   * handler knows was not delivered is always safe and is taken at its word.
   */
  static boolean isUnknownEffectRetry(LiveClaim c, Outcome outcome) {
    return outcome instanceof Outcome.Retry r
        && r.effect() == Outcome.Effect.UNKNOWN
        && !(c.policy.unknownOutcome() instanceof UnknownOutcomePolicy.Retry);
  }

  /**
   * The write for an unknown-effect retry the handler returned; see {@link #isUnknownEffectRetry}.
   */
  static Settlement forUnknownEffectRetry(
      LiveClaim c, Outcome.Retry retry, Reconciliation reconciliation) {
    return forUnknown(
        c,
        shutDown(c) ? SHUTDOWN : "retry",
        (shutDown(c) ? "the worker shut down; " : "")
            + "the handler asked to retry with the effect unknown: "
            + text(retry.reason(), "retry"),
        reconciliation);
  }

  private static Settlement forUnknown(
      LiveClaim c, String kind, String text, Reconciliation reconciliation) {
    if (c.isCancelRequested()) {
      return new Settlement.Cancelled(
          c.ref,
          "cancel requested; the last attempt ended with " + kind + ": " + text,
          Evidence.UNKNOWN);
    }
    UnknownOutcomePolicy policy = c.policy.unknownOutcome();
    if (policy instanceof UnknownOutcomePolicy.Park) {
      return park(c, kind, text);
    }
    if (policy instanceof UnknownOutcomePolicy.Reconcile) {
      Reconciliation.Verdict v =
          reconciliation == null ? Reconciliation.Verdict.UNKNOWN : reconciliation.verdict();
      switch (v) {
        case ACCEPTED:
          return complete(c, reconciliation.receiverRef(), null, "accepted");
        case NOT_ACCEPTED:
          return retryOrExhaust(
              c,
              shutdownDelay(c),
              kind,
              text + "; the receiver reports it did not accept the work",
              Evidence.NOT_DELIVERED);
        default:
          return park(c, kind, text + "; the receiver could not tell whether it accepted the work");
      }
    }
    return retryOrExhaust(c, shutdownDelay(c), kind, text, Evidence.UNKNOWN);
  }

  /** Whether the worker's shutdown stopped this claim (a timeout that came first keeps its own). */
  private static boolean shutDown(LiveClaim c) {
    return c.stoppedForShutdown && !c.timedOut;
  }

  /** No delay after a shutdown (the work is due at once); otherwise the kind's backoff. */
  private static Duration shutdownDelay(LiveClaim c) {
    return shutDown(c) ? Duration.ZERO : null;
  }

  /** Parks the work: failed, with outcome unknown, for an operator to reconcile. */
  static Settlement park(LiveClaim c, String kind, String text) {
    return new Settlement.Fail(
        c.ref,
        kind,
        clip(text + " (effect unknown; parked by the kind's policy)"),
        Evidence.UNKNOWN);
  }

  /** Done, as reported by a reconciler. */
  static Settlement accepted(LiveClaim c, String receiverRef) {
    return complete(c, receiverRef, null, "accepted");
  }

  private static Settlement complete(
      LiveClaim c, String receiverRef, String resultJson, String milestone) {
    String result = resultJson;
    if (result != null && JsonText.problem(result, MAX_RESULT_BYTES) != null) {
      // The effect happened; keep the text as a JSON string rather than lose the done.
      result = jsonString(clip(result));
    }
    return new Settlement.Complete(c.ref, receiverRef, result, milestone);
  }

  /**
   * A snooze: the attempt is given back, so the attempt cap does not apply here; the store counts
   * the snooze against the kind's cap and records one past it as a retry. The retry window does
   * apply: a snooze that would start after it fails the work, as a retry would.
   */
  private static Settlement snooze(LiveClaim c, Outcome.Snooze z) {
    String text = text(z.reason(), "snoozed");
    if (c.isCancelRequested()) {
      return new Settlement.Cancelled(
          c.ref, "cancel requested; the handler asked to snooze: " + text, Evidence.NOT_DELIVERED);
    }
    Settlement.Fail late = pastRetryWindow(c, z.delay(), "snoozed", text, Evidence.NOT_DELIVERED);
    return late != null ? late : new Settlement.Snooze(c.ref, z.delay(), text);
  }

  private static Settlement retryOrExhaust(
      LiveClaim c, Duration explicitDelay, String kind, String text, Evidence evidence) {
    int max = Math.min(c.policy.maxAttempts(), c.maxAttempts());
    if (c.attempt() >= max) {
      return new Settlement.Fail(
          c.ref,
          "attempts_exhausted",
          clip("all " + max + " attempts used; last error (" + kind + "): " + text),
          evidence);
    }
    Duration delay =
        explicitDelay != null
            ? explicitDelay
            : Backoff.delay(c.policy.backoffBase(), c.policy.backoffCap(), c.attempt());
    Settlement.Fail late = pastRetryWindow(c, delay, kind, text, evidence);
    return late != null ? late : new Settlement.Retry(c.ref, delay, kind, clip(text), evidence);
  }

  /** The failure of a next attempt {@code delay} away that would start after the retry window. */
  private static Settlement.Fail pastRetryWindow(
      LiveClaim c, Duration delay, String kind, String text, Evidence evidence) {
    Instant first = c.firstAttemptAt();
    if (first == null) {
      return null;
    }
    Duration elapsed = Duration.between(first, c.estimatedDatabaseNow());
    if (elapsed.plus(delay).compareTo(c.policy.maxElapsed()) <= 0) {
      return null;
    }
    return new Settlement.Fail(
        c.ref,
        "retry_window_exhausted",
        clip(
            "the next attempt would start after the retry window of "
                + c.policy.maxElapsed()
                + "; last error ("
                + kind
                + "): "
                + text),
        evidence);
  }

  static Evidence evidence(Outcome.Effect effect) {
    return effect == Outcome.Effect.NOT_DELIVERED ? Evidence.NOT_DELIVERED : Evidence.UNKNOWN;
  }

  static String describe(Throwable t) {
    if (t == null) {
      return "no error";
    }
    String m = t.getMessage();
    return clip(t.getClass().getName() + (m == null ? "" : ": " + m));
  }

  private static String text(String reason, String fallback) {
    return reason == null || reason.isBlank() ? fallback : clip(reason);
  }

  static String clip(String s) {
    return Settlement.clip(s);
  }

  private static String jsonString(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (ch < 0x20) {
            b.append(String.format("\\u%04x", (int) ch));
          } else {
            b.append(ch);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
