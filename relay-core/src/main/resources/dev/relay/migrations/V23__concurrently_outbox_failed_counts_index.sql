-- Relay schema: failed work counted per (queue, kind) and per (queue, kind, reason) from the index
-- alone: the overview's failed counts and blocked keys (Admin.health) and the failures page
-- (Admin.failureGroups) read it index-only instead of fetching every failed row from the table
-- (50,000 failed rows at 5M: 131-711 ms through outbox_finished_idx, 12-24 ms index-only; see
-- docs/performance.md, "Console pages at 5M rows"). Partial: a row has an entry only while it is
-- failed, so enqueue, claim, renew and a settle to done or cancelled write nothing to it; each
-- failure writes one entry (about 140 bytes of WAL measured, +15-19 % on the failing update).
-- Every column in it is fixed while the row is failed, so it costs no HOT update.
--
-- Built concurrently (docs/operations.md, section 10): writes go on during the build.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_failed_counts_idx
    ON ${relay_schema}.outbox (queue, kind, last_error_kind) INCLUDE (completed_at, ordering_key)
    WHERE state = 'failed';
