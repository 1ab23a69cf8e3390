-- Relay schema, version 3: the receiver side. A service that receives messages (from Relay or any
-- sender with stable message IDs) runs these tables in its own database, beside its own rows, so
-- that recording a message and applying its effect are one local transaction.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- One row per (consumer, message) applied: the first delivery's payload and the
-- result the effect returned. A repeat finds the row and returns the result; a different payload
-- under the same ID is refused. The row commits or rolls back with the effect, so its presence
-- means "applied", never "tried". Incoming request tokens (Idempotency-Key) use the same table
-- with the request scope as consumer and the request body as payload.
CREATE TABLE ${relay_schema}.inbox (
    consumer        text        NOT NULL,
    message_id      text        NOT NULL,
    payload         jsonb       NOT NULL,
    result          jsonb,
    received_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    processed_at    timestamptz,
    PRIMARY KEY (consumer, message_id)
);
COMMENT ON TABLE ${relay_schema}.inbox IS
    'Relay receiver inbox: messages applied once per consumer; kept at least for the consumer''s horizon (inbox_consumer)';

-- Retention: purge walks one consumer's rows by age.
CREATE INDEX inbox_received_idx ON ${relay_schema}.inbox (consumer, received_at);

-- Per consumer, how long inbox evidence is kept. Operators read it here; senders must not retry
-- or redrive a message after the receiver's horizon has passed (a producer kind's dedup_horizon
-- must not exceed it). A consumer without a row is never purged.
CREATE TABLE ${relay_schema}.inbox_consumer (
    consumer    text        PRIMARY KEY,
    horizon     interval    NOT NULL CHECK (horizon > interval '0'),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_by  text        NOT NULL DEFAULT current_user
);

-- Per protected resource, the highest fencing token accepted. A write protected by a fence
-- advances this row in its own transaction; the row lock orders concurrent writers.
CREATE TABLE ${relay_schema}.fence (
    resource       text        PRIMARY KEY,
    highest_token  bigint      NOT NULL CHECK (highest_token >= 0),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
