package dev.relay.admin;

import java.time.Instant;

/**
 * What one {@link Maintenance#runOnce()} did.
 *
 * @param leader whether this instance held the schema's maintenance lock and so did the work;
 *     {@code false} when another process holds it (nothing was done here)
 * @param purge what the retention purge did, or {@code null} when not the leader
 * @param summaryAsOf when the done/cancelled summary was recounted, or {@code null} when not the
 *     leader
 * @param rolledUp finished items folded into the charts' rollup ({@link Admin#charts}) by this run
 */
public record MaintenanceResult(
    boolean leader, PurgeResult purge, Instant summaryAsOf, long rolledUp) {}
