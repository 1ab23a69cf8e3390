package dev.relay.admin;

/**
 * What a bulk action did, or would do, to the items of its filter, by what happens to each.
 *
 * @param matching items matching the filter (for a preview; for a run, the items handled so far)
 * @param changed items redriven, cancelled, or purged
 * @param requested running items asked to stop (a cancel of running work)
 * @param refusedRunning items refused because they run (a redrive or purge never touches running
 *     work)
 * @param refusedHorizon for a redrive, items refused because their kind's deduplication horizon has
 *     passed since the first attempt (the receiver may no longer recognise the work ID); for a
 *     purge, items refused because they ended within it (the retention purge keeps them that long)
 * @param refusedState items refused in their state (a redrive of work that is not failed without
 *     force; a cancel of ended work; a purge of ready or failed work)
 * @param gone items purged between the selection and the lock (a run only)
 */
public record BulkCounts(
    long matching,
    long changed,
    long requested,
    long refusedRunning,
    long refusedHorizon,
    long refusedState,
    long gone) {
  /** Items refused, for any reason. */
  public long refused() {
    return refusedRunning + refusedHorizon + refusedState;
  }
}
