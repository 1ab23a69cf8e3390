package dev.relay.admin;

import java.time.Instant;

/**
 * A bulk action as stored in {@code bulk_operation}: its filter, action, who and why, and how far
 * it got. Each batch commits its items, their audit rows and this progress together, so the counts
 * are exactly what was done. See {@link Admin#startBulk} and {@link Admin#runBulk}.
 *
 * @param id the bulk action's ID
 * @param action the action
 * @param force whether a redrive also takes work that is not failed
 * @param filter which work
 * @param actor who asked, recorded in each item's audit row
 * @param reason why, recorded in each item's audit row
 * @param state {@code running} (batches remain; {@link Admin#runBulk} continues it), {@code done}
 *     or {@code stopped}
 * @param createdAt when it was started (work created later is not part of it)
 * @param updatedAt when its last batch committed
 * @param finishedAt when it ended, or {@code null}
 * @param batches batches committed
 * @param counts what was done so far ({@link BulkCounts#matching()}: items handled)
 */
public record BulkProgress(
    long id,
    BulkAction action,
    boolean force,
    WorkFilter filter,
    String actor,
    String reason,
    String state,
    Instant createdAt,
    Instant updatedAt,
    Instant finishedAt,
    long batches,
    BulkCounts counts) {
  /** Whether batches remain. */
  public boolean running() {
    return "running".equals(state);
  }
}
