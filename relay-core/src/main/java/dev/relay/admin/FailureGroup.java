package dev.relay.admin;

import java.time.Instant;

/**
 * Failed work of one queue and kind that failed for one reason: the {@code last_error_kind} its
 * handler or the runtime recorded ({@code deadline}, {@code max_attempts}, {@code http_502}, ...).
 * Read by {@link Admin#failureGroups()}.
 *
 * @param queue the queue
 * @param kind the kind
 * @param reason the recorded error kind, or {@code null} when none was recorded
 * @param count how many items are failed now for it
 * @param latestFailedAt when the most recent of them failed
 */
public record FailureGroup(
    String queue, String kind, String reason, long count, Instant latestFailedAt) {}
