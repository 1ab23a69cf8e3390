package dev.relay.admin;

import java.util.List;

/**
 * What a bounded payload search found ({@link Admin#searchPayload}): the matching items, newest
 * first, and how much of the window it read to find them.
 *
 * @param items the matches, newest first, at most the limit asked
 * @param scanned how many items of the window were read (all kinds: the cap is applied first)
 * @param capped whether the search stopped at {@link Admin#MAX_SEARCH_SCAN}: older items of the
 *     window were not read, so a narrower window (or one further back) may find more
 * @param more whether more matches than the limit were found among the items read
 */
public record PayloadSearch(List<WorkItem> items, long scanned, boolean capped, boolean more) {}
