package dev.relay.admin;

import java.time.Duration;
import java.time.Instant;

/**
 * One point of {@link Charts}: the work that finished within one bucket of the rollup.
 *
 * @param start the start of the bucket (the database clock, aligned to the step in UTC)
 * @param done work that became {@code done} in it
 * @param failed work that became {@code failed} in it
 * @param cancelled work that became {@code cancelled} in it
 * @param p50 the median creation-to-completion time of the done work, from the rollup's histogram
 *     (within 9.05 % of the exact value, see {@link Charts}), or {@code null} without done work
 * @param p95 the 95th percentile, likewise
 */
public record ChartPoint(
    Instant start, long done, long failed, long cancelled, Duration p50, Duration p95) {}
