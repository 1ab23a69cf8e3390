package dev.relay.admin;

import java.time.Instant;

/**
 * How much work ended within one minute of the database clock: completed ({@code done}) and failed.
 * Read by {@link Admin#completionsPerMinute(java.time.Duration)}, one per minute of the window,
 * minutes without any as zeros.
 *
 * @param minute the start of the minute
 * @param done work that became {@code done} within it (still in the table: purged work is gone)
 * @param failed work that became {@code failed} within it and is still failed (a redriven item
 *     counts where it ends next)
 */
public record CompletionMinute(Instant minute, long done, long failed) {}
