package dev.relay.admin;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * The health of one (queue, kind) pair, read in one statement on the database clock. Ready, running
 * and failed counts, ages, leases and blocked keys are exact at that instant (read through partial
 * indexes, never a scan of the whole work table); done and cancelled counts come from the summary
 * that the maintenance leader refreshes, as of {@link #finishedCountsAsOf()}.
 *
 * @param queue the queue
 * @param kind the kind
 * @param ready work waiting to be claimed (including work waiting for a retry or a delay)
 * @param running work claimed by a worker (including claims whose lease has expired)
 * @param done work completed, as of {@code finishedCountsAsOf} (0 before the first refresh)
 * @param failed work that ended failed
 * @param cancelled work that ended cancelled, as of {@code finishedCountsAsOf}
 * @param oldestEligibleAge how long the longest-waiting eligible item has been claimable: ready
 *     work since its {@code available_at}, running work with an expired lease since the lease
 *     ended; {@link Duration#ZERO} when nothing is eligible. Work waiting for a dependency that is
 *     not done is not eligible (the claim would not take it), held for good or not; once its
 *     dependencies are done it counts from its own {@code available_at}. This is the age an alert
 *     should watch
 * @param expiredLeases running work whose lease has expired (its worker stopped or stalled; the
 *     next claim takes it over)
 * @param blockedKeys ordering keys held by a failed item: nothing behind it runs until it is
 *     redriven or cancelled
 * @param failuresByReason over the window: work that ended failed, counted by its {@code
 *     last_error_kind} ({@code unknown} when none was recorded); from the rollup where folded (see
 *     {@link Admin#health}), so a failure redriven since still counts
 * @param completedInWindow work completed ({@code done}) within the window
 * @param completionP50 median creation-to-completion time of the work done within the window, or
 *     {@code null} when none was: the nearest rank in the rollup's latency histogram, reported as
 *     its bin's middle (within 9.05 % of every time in that bin; 0.5 ms under a millisecond)
 * @param completionP95 95th percentile of the same, or {@code null}
 * @param finishedCountsAsOf when {@code done} and {@code cancelled} were counted (the last summary
 *     refresh by {@link Maintenance} or {@link Admin#refreshSummary()}), or {@code null} if the
 *     summary was never refreshed
 * @param blockedByReason ready work held by a dependency (docs/dependencies.md), counted by reason:
 *     {@code dependency_failed}, {@code dependency_cancelled}, {@code dependency_superseded},
 *     {@code dependency_missing}; exact at the same instant, read through the index of waiting
 *     dependents. Included in {@code ready}
 * @param pausedSince when the earliest pause in force that holds this pair began (a pause of its
 *     queue, its kind, or both; see {@link Admin#pause}), or {@code null} when none does: its ready
 *     work is then not claimed
 */
public record QueueHealth(
    String queue,
    String kind,
    long ready,
    long running,
    long done,
    long failed,
    long cancelled,
    Duration oldestEligibleAge,
    long expiredLeases,
    long blockedKeys,
    Map<String, Long> failuresByReason,
    long completedInWindow,
    Duration completionP50,
    Duration completionP95,
    Instant finishedCountsAsOf,
    Map<String, Long> blockedByReason,
    Instant pausedSince) {
  /** Copies the maps (unmodifiable, never null). */
  public QueueHealth {
    failuresByReason = failuresByReason == null ? Map.of() : Map.copyOf(failuresByReason);
    blockedByReason = blockedByReason == null ? Map.of() : Map.copyOf(blockedByReason);
  }

  /** Ready work held by a dependency, whatever the reason: the sum of {@link #blockedByReason}. */
  public long blocked() {
    return blockedByReason.values().stream().mapToLong(Long::longValue).sum();
  }

  /** Whether a pause in force holds this pair's work ({@link #pausedSince} is set). */
  public boolean paused() {
    return pausedSince != null;
  }

  /** Work that has not ended: ready plus running. */
  public long unfinished() {
    return ready + running;
  }
}
