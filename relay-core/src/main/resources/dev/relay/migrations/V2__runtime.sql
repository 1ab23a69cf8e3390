-- Relay schema, version 2: what the worker runtime adds.
--
-- ${relay_schema} is replaced by the validated schema name (default "relay").

-- Every cancel call, with who asked, why, and what it found. A cancel of ready work ends it at
-- once; of running work it only records a request that the worker answers at its next renewal.
-- Retention: kept like the redrive audit (at least as long as the work's attempt history).
CREATE TABLE ${relay_schema}.cancel_audit (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_id         text        NOT NULL,
    actor           text        NOT NULL,
    reason          text        NOT NULL,
    requested_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state      text,       -- NULL when no work had the ID
    from_generation bigint,
    result          text        NOT NULL CHECK (result IN
                        ('cancelled', 'cancel_requested', 'already_finished', 'not_found'))
);
CREATE INDEX cancel_audit_work_idx ON ${relay_schema}.cancel_audit (work_id);
CREATE INDEX cancel_audit_requested_idx ON ${relay_schema}.cancel_audit (requested_at);

COMMENT ON TABLE ${relay_schema}.cancel_audit IS
    'Relay: every cancel request, with actor and reason; see docs/guide.md';
