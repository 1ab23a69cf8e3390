package dev.relay.internal.store;

import java.util.Objects;

/**
 * An outcome a worker gave up: it could not record the settlement before the claim's lease passed
 * (PostgreSQL unreachable), so the claim's authority is gone and the settlement will never be
 * applied. {@link WorkStore#recordAbandoned} keeps it in the attempt history as evidence.
 *
 * @param ref the claim whose outcome was given up
 * @param operation the settlement given up
 * @param evidence what was known about the effect, or {@code null} when the settlement carried none
 *     (a release)
 * @param receiverRef the receiver's reference for the effect, or {@code null}
 * @param errorKind the settlement's error kind, or {@code null}
 * @param error the settlement's error text (or a cancellation's reason), or {@code null}
 */
public record AbandonedOutcome(
    ClaimRef ref,
    Operation operation,
    Settlement.Evidence evidence,
    String receiverRef,
    String errorKind,
    String error) {

  /** The settlement that was given up, as stored in {@code attempt.action}. */
  public enum Operation {
    /** {@link Settlement.Complete}. */
    COMPLETE("complete"),
    /** {@link Settlement.Retry}. */
    RETRY("retry"),
    /** {@link Settlement.Snooze}. */
    SNOOZE("snooze"),
    /** {@link Settlement.Fail}. */
    FAIL("fail"),
    /** {@link Settlement.Cancelled}. */
    CANCELLED("cancelled"),
    /** {@link Settlement.Release}. */
    RELEASE("release");

    private final String sql;

    Operation(String sql) {
      this.sql = sql;
    }

    /** The value stored in the database. */
    public String sql() {
      return sql;
    }
  }

  /** Checks that the claim and the operation are named. */
  public AbandonedOutcome {
    Objects.requireNonNull(ref, "ref");
    Objects.requireNonNull(operation, "operation");
  }

  /**
   * The abandoned form of {@code settlement}: its claim, operation and evidence. A completion is
   * evidence of delivery.
   */
  public static AbandonedOutcome of(Settlement settlement) {
    if (settlement instanceof Settlement.Complete d) {
      return new AbandonedOutcome(
          d.ref(), Operation.COMPLETE, Settlement.Evidence.DELIVERED, d.receiverRef(), null, null);
    } else if (settlement instanceof Settlement.Retry r) {
      return new AbandonedOutcome(
          r.ref(), Operation.RETRY, r.evidence(), null, r.errorKind(), r.error());
    } else if (settlement instanceof Settlement.Snooze z) {
      return new AbandonedOutcome(
          z.ref(),
          Operation.SNOOZE,
          Settlement.Evidence.NOT_DELIVERED,
          null,
          "snoozed",
          z.reason());
    } else if (settlement instanceof Settlement.Fail f) {
      return new AbandonedOutcome(
          f.ref(), Operation.FAIL, f.evidence(), null, f.errorKind(), f.error());
    } else if (settlement instanceof Settlement.Cancelled x) {
      return new AbandonedOutcome(
          x.ref(), Operation.CANCELLED, x.evidence(), null, "cancelled", x.reason());
    } else if (settlement instanceof Settlement.Release x) {
      return new AbandonedOutcome(x.ref(), Operation.RELEASE, null, null, null, null);
    }
    throw new IllegalArgumentException("unknown settlement " + settlement);
  }
}
