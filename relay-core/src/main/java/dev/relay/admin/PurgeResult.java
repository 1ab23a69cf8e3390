package dev.relay.admin;

/**
 * What a purge deleted, or for a dry run what it would delete now (a dry run counts every eligible
 * row, without the batch limit, and changes nothing).
 *
 * @param dryRun whether this was a dry run
 * @param work done and cancelled work purged (each left a tombstone): rows of the work table purged
 *     one by one, and the rows of the history table's days retired
 * @param tombstones tombstones purged after the identity horizon
 * @param attempts attempt-history rows purged
 * @param audits redrive audit, cancel audit, supersedes, purge audit and bulk purge audit rows
 *     purged
 * @param complete whether everything eligible was purged (false when a table hit {@code
 *     maxBatches}, or when retiring a history day waited too long for its lock; the next run
 *     continues)
 * @param historyDays days of the history table retired, each as a whole (its partition dropped; its
 *     rows' tombstones were written when they finished; their rows are counted in {@code work})
 */
public record PurgeResult(
    boolean dryRun,
    long work,
    long tombstones,
    long attempts,
    long audits,
    boolean complete,
    long historyDays) {}
