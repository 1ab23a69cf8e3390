package dev.relay.admin;

import dev.relay.WorkState;
import java.time.Instant;

/**
 * One work row as an operator sees it, without its payload and result (see {@link WorkDetail}).
 *
 * @param workId the work ID
 * @param kind the kind
 * @param queue the queue
 * @param state {@code ready}, {@code running}, {@code done}, {@code failed} or {@code cancelled}
 * @param priority the claim priority
 * @param generation the claim generation: how many claims the work has had, never reset
 * @param attempts attempts used in the current budget (reset by a redrive)
 * @param maxAttempts the attempt cap
 * @param createdAt when it was enqueued
 * @param availableAt the earliest next claim
 * @param firstAttemptAt the first claim ever (a redrive keeps it), or {@code null}
 * @param claimedBy the current owner while running, else {@code null}
 * @param leaseUntil the current lease end while running, else {@code null}
 * @param completedAt when it ended, or {@code null}
 * @param deadline the business deadline, or {@code null}
 * @param orderingKey the ordering key, or {@code null}
 * @param sequence the sequence within the key, or {@code null}
 * @param lastErrorKind the last error's kind, or {@code null}
 * @param lastError the last error's text, or {@code null}
 * @param outcome the evidence of the effect: {@code delivered}, {@code not_delivered}, {@code
 *     unknown}, or {@code null} when nothing is known yet
 * @param receiverRef the receiver's reference for a done item, or {@code null}
 * @param cancelRequestedAt when a cancel was requested, or {@code null}
 */
public record WorkItem(
    String workId,
    String kind,
    String queue,
    String state,
    int priority,
    long generation,
    int attempts,
    int maxAttempts,
    Instant createdAt,
    Instant availableAt,
    Instant firstAttemptAt,
    String claimedBy,
    Instant leaseUntil,
    Instant completedAt,
    Instant deadline,
    String orderingKey,
    Long sequence,
    String lastErrorKind,
    String lastError,
    String outcome,
    String receiverRef,
    Instant cancelRequestedAt) {
  /** {@link #state()} as a {@link WorkState}. */
  public WorkState workState() {
    return WorkState.fromSql(state);
  }
}
