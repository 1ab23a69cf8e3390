package dev.relay.admin;

import java.time.Instant;

/**
 * How much work ended within one minute of the database clock: completed ({@code done}) and failed.
 * Read by {@link Admin#completionsPerMinute(java.time.Duration)}, one per minute of the window,
 * minutes without any as zeros.
 *
 * @param minute the start of the minute
 * @param done work that became {@code done} within it (once folded into the charts' rollup, see
 *     {@link Admin#completionsPerMinute}, purged work stays counted)
 * @param failed work that became {@code failed} within it (once folded, a failure redriven since
 *     still counts; before, only work still failed)
 */
public record CompletionMinute(Instant minute, long done, long failed) {}
