package dev.relay.internal.store;

import java.time.Instant;

/**
 * A row this worker now holds under a lease.
 *
 * @param workId the work ID
 * @param kind the kind
 * @param queue the queue
 * @param payload the payload as JSON text
 * @param generation the claim generation this claim received (every later write names it)
 * @param attempt the attempt number, counting this claim
 * @param maxAttempts the attempt cap stored with the row
 * @param leaseUntil the lease deadline on the database clock
 * @param deadline the business deadline, or {@code null}
 * @param createdAt when the work was enqueued
 * @param firstAttemptAt when the current retry window started: the work's first claim, or the first
 *     claim after its last redrive
 * @param reclaimed whether this claim took over an expired lease of another claim
 * @param previousOwner the worker whose lease expired, when {@code reclaimed}
 * @param orderingKey the ordering key, or {@code null}
 * @param sequence the sequence within the key, or {@code null}
 * @param previousDeliveredSequence the highest lower sequence of the key that is done, or {@code
 *     null} when none is (or the work is unkeyed)
 * @param traceContext the producer's trace context as stored (a JSON object), or {@code null}
 */
public record ClaimedWork(
    String workId,
    String kind,
    String queue,
    String payload,
    long generation,
    int attempt,
    int maxAttempts,
    Instant leaseUntil,
    Instant deadline,
    Instant createdAt,
    Instant firstAttemptAt,
    boolean reclaimed,
    String previousOwner,
    String orderingKey,
    Long sequence,
    Long previousDeliveredSequence,
    String traceContext) {
  /** This claim's authority. */
  public ClaimRef ref() {
    return new ClaimRef(workId, generation);
  }
}
