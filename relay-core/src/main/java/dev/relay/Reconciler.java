package dev.relay;

/**
 * Asks a receiver whether it accepted a work ID, for kinds whose {@link UnknownOutcomePolicy} is
 * {@link UnknownOutcomePolicy#reconcile}. Runs on the handler's thread, under the same claim (its
 * lease is renewed meanwhile), and within nothing else: it may wait for the receiver to settle, but
 * the kind's max run time does not apply to it, so bound its own calls.
 */
@FunctionalInterface
public interface Reconciler {
  /**
   * Asks the receiver about {@code claim.workId()}.
   *
   * @param claim the claim whose attempt (or whose predecessor's attempt) has an unknown effect
   * @return the receiver's answer; {@code null} counts as {@link Reconciliation#unknown()}
   * @throws Exception counts as {@link Reconciliation#unknown()}: the work is parked
   */
  Reconciliation check(Claim claim) throws Exception;
}
