-- A partial index built concurrently, for the tests: a partial index's build is not one that
-- another concurrent build may ignore, so two builds of it on one table wait for each other.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe_failed_kind
    ON ${relay_schema}.outbox (kind) WHERE state = 'failed';
