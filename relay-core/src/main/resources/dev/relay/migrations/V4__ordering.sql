-- Relay schema, version 4: ordered delivery per key.
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- The previous delivered sequence of a key, read at claim time, looks among done rows too; the
-- partial index of V1 (unfinished keyed work) serves the claim gate, this one the look-back.
CREATE INDEX outbox_key_all_idx ON ${relay_schema}.outbox (ordering_key, sequence)
    WHERE ordering_key IS NOT NULL;

-- Receiver side: per consumer and ordering key, the last sequence applied (strict history) or the
-- highest version accepted (latest state). Written in the receiver's own transaction together with
-- the effect, so the position and the effect commit or roll back together.
CREATE TABLE ${relay_schema}.receiver_key_position (
    consumer     text        NOT NULL,
    ordering_key text        NOT NULL,
    position     bigint      NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer, ordering_key)
);
COMMENT ON TABLE ${relay_schema}.receiver_key_position IS
    'Relay receiver: last applied sequence (strict history) or highest version (latest state) per consumer and key';
