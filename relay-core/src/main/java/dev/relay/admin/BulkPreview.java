package dev.relay.admin;

/**
 * What a bulk action would do now, counted without locking or changing anything ({@link
 * Admin#bulkPreview}): the same checks the run makes per item under its row lock, so the run's
 * counts differ only by what changed meanwhile (a worker claimed an item, new work arrived).
 *
 * @param action the action
 * @param force whether a redrive would also take work that is not failed
 * @param counts by what would happen to each item
 * @param capped whether more than {@link Admin#MAX_BULK_PREVIEW} items match: the counts are those
 *     of the oldest that many (the run itself takes every matching item)
 */
public record BulkPreview(BulkAction action, boolean force, BulkCounts counts, boolean capped) {}
