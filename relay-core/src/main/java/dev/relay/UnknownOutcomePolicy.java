package dev.relay;

import java.util.Objects;

/**
 * What a kind does when an attempt's effect is unknown: the handler threw, ran past its timeout, or
 * (for {@link #park} and {@link #reconcile}) the previous claim's lease expired with its call
 * possibly in flight. A receiver that deduplicates by work ID makes {@link #retry} safe; for one
 * that cannot, choose between a possible duplicate ({@link #retry}), a possible omission ({@link
 * #park}) and asking the receiver ({@link #reconcile}). Changing the work ID does not remove the
 * uncertainty.
 */
public sealed interface UnknownOutcomePolicy
    permits UnknownOutcomePolicy.Retry, UnknownOutcomePolicy.Park, UnknownOutcomePolicy.Reconcile {

  /** Retry with the kind's backoff (possible duplicate). The default. */
  static UnknownOutcomePolicy retry() {
    return Retry.INSTANCE;
  }

  /**
   * Park the work as {@code failed} with outcome {@code unknown} (possible omission), for an
   * operator to reconcile and redrive deliberately. Work reclaimed after an expired lease is parked
   * too, without running again.
   */
  static UnknownOutcomePolicy park() {
    return Park.INSTANCE;
  }

  /**
   * Ask the receiver whether it accepted the work ID before anything else: right after an attempt
   * whose effect is unknown, and before running work reclaimed after an expired lease. An answer of
   * {@link Reconciliation#accepted} records done; {@link Reconciliation#notAccepted} retries
   * (safely: known not delivered); {@link Reconciliation#unknown}, or a reconciler that throws,
   * parks.
   */
  static UnknownOutcomePolicy reconcile(Reconciler reconciler) {
    return new Reconcile(reconciler);
  }

  /**
   * The name stored in the {@code kind} table: {@code retry}, {@code park} or {@code reconcile}.
   */
  String storedName();

  /** See {@link UnknownOutcomePolicy#retry()}. */
  final class Retry implements UnknownOutcomePolicy {
    private static final Retry INSTANCE = new Retry();

    private Retry() {}

    @Override
    public String storedName() {
      return "retry";
    }

    @Override
    public String toString() {
      return "retry";
    }
  }

  /** See {@link UnknownOutcomePolicy#park()}. */
  final class Park implements UnknownOutcomePolicy {
    private static final Park INSTANCE = new Park();

    private Park() {}

    @Override
    public String storedName() {
      return "park";
    }

    @Override
    public String toString() {
      return "park";
    }
  }

  /**
   * See {@link UnknownOutcomePolicy#reconcile(Reconciler)}.
   *
   * @param reconciler asks the receiver
   */
  record Reconcile(Reconciler reconciler) implements UnknownOutcomePolicy {
    /** Requires a reconciler. */
    public Reconcile {
      Objects.requireNonNull(reconciler, "reconciler");
    }

    @Override
    public String storedName() {
      return "reconcile";
    }
  }
}
