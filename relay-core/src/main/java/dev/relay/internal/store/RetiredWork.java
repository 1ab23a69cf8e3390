package dev.relay.internal.store;

/**
 * A row the claim statement ended instead of claiming, because a cap applied.
 *
 * @param workId the work ID
 * @param kind the kind
 * @param queue the queue
 * @param state the state it now has: {@code failed} or {@code cancelled}
 * @param reason {@code deadline}, {@code attempts_exhausted}, {@code horizon_passed} or {@code
 *     cancelled}
 * @param afterExpiredLease whether the last claim's lease had expired (so its effect is unknown)
 */
public record RetiredWork(
    String workId,
    String kind,
    String queue,
    String state,
    String reason,
    boolean afterExpiredLease) {}
