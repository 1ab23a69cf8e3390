-- Relay schema, version 13: pausing a queue, a kind, or a (queue, kind) pair.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- One row per pause in force. Every claim reads this table: a row holds the work of its queue (NULL:
-- every queue) and kind (NULL: every kind) until it is deleted (resume) or its resume_at passes on
-- the database clock. Workers of the previous release never read it and keep claiming paused work,
-- so pause only once every worker runs this release. Small by nature: a handful of rows at most.
CREATE TABLE ${relay_schema}.pause (
    queue      text,
    kind       text,
    actor      text        NOT NULL,
    reason     text        NOT NULL,
    paused_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The automatic resume; NULL: until resumed.
    resume_at  timestamptz,
    CHECK (queue IS NOT NULL OR kind IS NOT NULL),
    -- One pause per target; NULL (every queue, every kind) counts as a value here.
    UNIQUE NULLS NOT DISTINCT (queue, kind)
);

COMMENT ON TABLE ${relay_schema}.pause IS
    'Relay: paused queues and kinds, read by every claim; see docs/operations.md';

-- Every pause and resume, with who, why and when; an expired pause removed by the maintenance
-- leader is recorded as auto_resume. Retention: kept like the other audits.
CREATE TABLE ${relay_schema}.pause_audit (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action     text        NOT NULL CHECK (action IN ('pause', 'resume', 'auto_resume')),
    queue      text,
    kind       text,
    actor      text        NOT NULL,
    reason     text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- pause: the automatic resume asked for; resume: the pause's own (NULL: none)
    resume_at  timestamptz,
    -- resume: when the lifted pause began; NULL when nothing was paused
    paused_at  timestamptz
);
CREATE INDEX pause_audit_at_idx ON ${relay_schema}.pause_audit (at);

COMMENT ON TABLE ${relay_schema}.pause_audit IS
    'Relay: every pause and resume, with actor and reason; see docs/operations.md';
