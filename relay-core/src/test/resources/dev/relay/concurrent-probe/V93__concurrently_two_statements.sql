-- Marked concurrent but more than one index: refused before anything runs.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe_a ON ${relay_schema}.outbox (kind);
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe_b ON ${relay_schema}.outbox (queue);
