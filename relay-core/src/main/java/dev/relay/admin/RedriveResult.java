package dev.relay.admin;

import java.time.Instant;

/**
 * What a redrive did with one item. The single-item {@link Admin#redrive(String, RedriveRequest)}
 * throws instead of returning a refusal; the filter form reports refusals here, per item.
 *
 * @param workId the work ID
 * @param status redriven or refused
 * @param fromState the state before, or {@code null} when not found
 * @param fromGeneration the claim generation before (the next claim takes a higher one)
 * @param forced whether an override was used (not failed, or past the dedup horizon)
 * @param refusal why it was refused, or {@code null}
 * @param message a readable account of the refusal, or {@code null}
 * @param firstAttemptAt the first attempt, when the dedup horizon refused, else {@code null}
 * @param horizonEnd when the dedup horizon ended, when it refused, else {@code null}
 */
public record RedriveResult(
    String workId,
    Status status,
    String fromState,
    long fromGeneration,
    boolean forced,
    RedriveRefusedException.Reason refusal,
    String message,
    Instant firstAttemptAt,
    Instant horizonEnd) {
  /** Whether the work was redriven. */
  public enum Status {
    /** The work is {@code ready} again with a new attempt budget; the audit row was written. */
    REDRIVEN,
    /** Nothing changed; see {@link RedriveResult#refusal()}. */
    REFUSED
  }

  /** Whether the work was redriven. */
  public boolean redriven() {
    return status == Status.REDRIVEN;
  }

  /** The refusal as an exception (for the single-item form); {@code null} when redriven. */
  public RedriveRefusedException toException() {
    return refusal == null
        ? null
        : new RedriveRefusedException(workId, refusal, message, firstAttemptAt, horizonEnd);
  }
}
