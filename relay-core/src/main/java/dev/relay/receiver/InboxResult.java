package dev.relay.receiver;

import java.time.Instant;

/**
 * What the inbox did with one delivery.
 *
 * @param consumer the consumer (or request scope)
 * @param messageId the message ID (or request key)
 * @param status whether the effect ran now, ran before, or is running elsewhere
 * @param result the effect's result as JSON text (normalised by jsonb on a repeat); {@code null}
 *     only for {@link Status#IN_PROGRESS}
 * @param firstReceivedAt when the first delivery was recorded (database clock); {@code null} for
 *     {@link Status#IN_PROGRESS}
 */
public record InboxResult(
    String consumer, String messageId, Status status, String result, Instant firstReceivedAt) {
  /** The three answers of the inbox. */
  public enum Status {
    /** First delivery: the effect ran in this transaction and its result was saved. */
    APPLIED,
    /** A jsonb-equal repeat: the saved result is returned, the effect did not run. */
    DUPLICATE,
    /**
     * Only from {@link Inbox#tryProcess}: another transaction is applying the same message right
     * now. Nothing was written; ask the sender to retry later (HTTP 409 with Retry-After).
     */
    IN_PROGRESS
  }

  /** Whether the effect ran in this call. */
  public boolean applied() {
    return status == Status.APPLIED;
  }

  /** Whether this was a repeat answered from the saved result. */
  public boolean duplicate() {
    return status == Status.DUPLICATE;
  }
}
