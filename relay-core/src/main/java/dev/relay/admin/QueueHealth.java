package dev.relay.admin;

import java.time.Duration;
import java.util.Map;

/**
 * The health of one (queue, kind) pair, read from the work table in one statement on the database
 * clock.
 *
 * @param queue the queue
 * @param kind the kind
 * @param ready work waiting to be claimed (including work waiting for a retry or a delay)
 * @param running work claimed by a worker (including claims whose lease has expired)
 * @param done work completed
 * @param failed work that ended failed
 * @param cancelled work that ended cancelled
 * @param oldestEligibleAge how long the longest-waiting eligible item has been claimable: ready
 *     work since its {@code available_at}, running work with an expired lease since the lease
 *     ended; {@link Duration#ZERO} when nothing is eligible. This is the age an alert should watch
 * @param expiredLeases running work whose lease has expired (its worker stopped or stalled; the
 *     next claim takes it over)
 * @param blockedKeys ordering keys whose head is failed, holding the key (always 0 until ordered
 *     delivery is enforced)
 * @param failuresByReason over the window: work that ended failed, counted by its {@code
 *     last_error_kind} ({@code unknown} when none was recorded)
 * @param completedInWindow work completed ({@code done}) within the window
 * @param completionP50 median creation-to-completion time of the work done within the window, or
 *     {@code null} when none was
 * @param completionP95 95th percentile of the same, or {@code null}
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
    Duration completionP95) {
  /** Copies the failure map (unmodifiable, never null). */
  public QueueHealth {
    failuresByReason = failuresByReason == null ? Map.of() : Map.copyOf(failuresByReason);
  }

  /** Work that has not ended: ready plus running. */
  public long unfinished() {
    return ready + running;
  }
}
