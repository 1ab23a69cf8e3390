package dev.relay.admin;

import java.time.Instant;

/**
 * What a redrive of one item would meet now, read without locking or changing anything: the checks
 * of {@link Admin#redrive(String, RedriveRequest)}, so a tool can show the receiver's deduplication
 * horizon before the operator acts. The state may change before the redrive itself, which checks
 * again under a row lock.
 *
 * @param workId the work ID
 * @param state the current state ({@code ready}, {@code running}, ...)
 * @param claimGeneration the current claim generation
 * @param now the database clock when this was read
 * @param firstAttemptAt the first claim ever, from which the horizon is measured, or {@code null}
 *     if the work was never attempted (then no horizon applies)
 * @param horizonEnd when the kind's deduplication horizon ends for this item, or {@code null} if
 *     never attempted
 * @param kindRegistered whether the kind has a registered policy; if not, the horizon is {@link
 *     dev.relay.KindPolicy#DEFAULT_DEDUP_HORIZON}
 * @param pastHorizon whether the horizon has ended ({@code horizonEnd} is not after {@code now}): a
 *     redrive would need {@link RedriveRequest#overridingHorizon()}
 * @param refusal what a plain redrive (no force, no override) would be refused for, checked in the
 *     order the redrive checks (running, not failed, past the horizon), or {@code null} if it would
 *     go through
 */
public record RedrivePreview(
    String workId,
    String state,
    long claimGeneration,
    Instant now,
    Instant firstAttemptAt,
    Instant horizonEnd,
    boolean kindRegistered,
    boolean pastHorizon,
    RedriveRefusedException.Reason refusal) {
  /** Whether a plain redrive (no force, no override) would go through now. */
  public boolean wouldRedrive() {
    return refusal == null;
  }
}
