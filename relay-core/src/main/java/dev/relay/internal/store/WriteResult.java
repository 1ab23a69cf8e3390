package dev.relay.internal.store;

import java.time.Instant;

/**
 * Whether one guarded write applied. A stale claim is an expected race, not an error: it means
 * another generation owns the row, or the lease expired, or the work already ended. Stop using the
 * claim; never retry the write blindly.
 *
 * @param ref the claim the write named
 * @param applied whether it applied
 * @param leaseUntil for a renewal that applied, the new lease deadline; otherwise {@code null}
 * @param cancelRequested for a renewal that applied, whether cancellation has been requested
 * @param recordedAs for a settlement that applied, the action the store recorded ({@code complete},
 *     {@code retry}, {@code snooze}, {@code fail}, {@code cancelled}, {@code release}): it differs
 *     from the one asked for when a cap turned it (a snooze past its cap into {@code retry}, a
 *     retry past the attempt cap into {@code fail}); otherwise {@code null}
 */
public record WriteResult(
    ClaimRef ref, boolean applied, Instant leaseUntil, boolean cancelRequested, String recordedAs) {
  /** A result without a recorded action (a renewal, or a refused write). */
  public WriteResult(ClaimRef ref, boolean applied, Instant leaseUntil, boolean cancelRequested) {
    this(ref, applied, leaseUntil, cancelRequested, null);
  }

  /** Whether the claim was stale and the write refused. */
  public boolean stale() {
    return !applied;
  }
}
