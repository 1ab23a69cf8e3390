-- A unique index built concurrently: it fails while two rows share a payload.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe_unique_payload
    ON ${relay_schema}.outbox ((payload::text));
