package dev.relay;

import java.util.Objects;

/**
 * A receiver's answer to "did you accept this work ID?", from a {@link Reconciler}.
 *
 * @param verdict the answer
 * @param receiverRef the receiver's reference for the effect, when {@link Verdict#ACCEPTED}
 */
public record Reconciliation(Verdict verdict, String receiverRef) {
  /** The receiver's answer. */
  public enum Verdict {
    /** The receiver has the work: record done. */
    ACCEPTED,
    /** The receiver positively does not have it: retrying cannot duplicate it. */
    NOT_ACCEPTED,
    /** The receiver cannot tell: park the work for an operator. */
    UNKNOWN
  }

  /** Requires a verdict. */
  public Reconciliation {
    Objects.requireNonNull(verdict, "verdict");
  }

  /** The receiver accepted the work, under {@code receiverRef} (may be {@code null}). */
  public static Reconciliation accepted(String receiverRef) {
    return new Reconciliation(Verdict.ACCEPTED, receiverRef);
  }

  /** The receiver positively does not have the work. */
  public static Reconciliation notAccepted() {
    return new Reconciliation(Verdict.NOT_ACCEPTED, null);
  }

  /** The receiver cannot tell. */
  public static Reconciliation unknown() {
    return new Reconciliation(Verdict.UNKNOWN, null);
  }
}
