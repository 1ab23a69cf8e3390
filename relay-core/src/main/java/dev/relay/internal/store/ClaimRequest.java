package dev.relay.internal.store;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * What one claim transaction asks for.
 *
 * @param workerId the claiming worker, stored in {@code claimed_by}
 * @param queues the queues to take from (at least one)
 * @param kinds the kinds this worker can run (at least one)
 * @param limit the most rows to claim (1-10,000)
 * @param lease how long the claim lasts on the database clock
 * @param resumeAfter where the previous claim of a backlog stopped, or {@code null} to scan from
 *     the start of the claim order. With a position, only rows of its priority after it are
 *     considered: each queue's scan starts there instead of walking index entries of rows already
 *     taken, which vacuum cannot remove while an old transaction holds the xmin horizon. (Over
 *     several queues the position is the last row taken in the claim order of them all, so in each
 *     of them every eligible row before it was taken or locked by another claim.) Eligible rows
 *     before the position (a higher priority, an expired lease, a released ordering key) are found
 *     by the next claim without one, so the caller must scan from the start again regularly (the
 *     runtime's {@code ClaimScans} says when).
 */
public record ClaimRequest(
    String workerId,
    List<String> queues,
    List<String> kinds,
    int limit,
    Duration lease,
    ClaimPosition resumeAfter) {
  /** A claim that scans from the start of the claim order. */
  public ClaimRequest(
      String workerId, List<String> queues, List<String> kinds, int limit, Duration lease) {
    this(workerId, queues, kinds, limit, lease, null);
  }

  /** Validates and copies. */
  public ClaimRequest {
    if (workerId == null || workerId.isEmpty()) {
      throw new IllegalArgumentException("workerId is empty");
    }
    // each named queue is scanned once: a name given twice would spend the batch on its rows twice
    queues = List.copyOf(new LinkedHashSet<>(queues));
    kinds = List.copyOf(kinds);
    if (queues.isEmpty() || kinds.isEmpty()) {
      throw new IllegalArgumentException("queues and kinds must not be empty");
    }
    if (limit < 1 || limit > 10_000) {
      throw new IllegalArgumentException("limit must be 1-10000, was " + limit);
    }
    if (lease == null || lease.toMillis() < 1) {
      throw new IllegalArgumentException("lease must be at least 1 ms, was " + lease);
    }
  }
}
