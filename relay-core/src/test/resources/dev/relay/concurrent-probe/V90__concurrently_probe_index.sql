-- A concurrent index build for the tests: a later release's large index, built while workers write.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe_kind_created
    ON ${relay_schema}.outbox (kind, created_at);
