-- Relay schema, version 1: the work table, its history and the structures later features fill.
--
-- ${relay_schema} is replaced by the validated schema name (default "relay"). To run this file
-- from Flyway or Liquibase instead of Relay's migrator, define the placeholder relay_schema.
-- Every table here is a logged table: Relay's promises rest on the write-ahead log.

CREATE SCHEMA IF NOT EXISTS ${relay_schema};

-- The work table. The first ten columns and the running-means-claimed check are the article's
-- own, so an operator can run its INSERT, claim and completion statements against this table as
-- written. Every other column has a default, so an INSERT naming only work_id, kind and payload
-- works.
CREATE TABLE ${relay_schema}.outbox (
    work_id             text        PRIMARY KEY,
    kind                text        NOT NULL,
    payload             jsonb       NOT NULL,
    state               text        NOT NULL DEFAULT 'ready'
                        CHECK (state IN ('ready', 'running', 'done', 'failed', 'cancelled')),
    available_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    claim_generation    bigint      NOT NULL DEFAULT 0,
    claimed_by          text,
    lease_until         timestamptz,
    completed_at        timestamptz,
    created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    queue               text        NOT NULL DEFAULT 'default',
    priority            integer     NOT NULL DEFAULT 0,
    attempts            integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts        integer     NOT NULL DEFAULT 25 CHECK (max_attempts > 0),
    deadline            timestamptz,
    ordering_key        text,
    sequence            bigint,
    claimed_at          timestamptz,
    first_attempt_at    timestamptz,
    last_error          text,
    last_error_kind     text,
    outcome             text        CHECK (outcome IN ('delivered', 'not_delivered', 'unknown')),
    milestone           text,
    receiver_ref        text,
    result              jsonb,
    cancel_requested_at timestamptz,
    CONSTRAINT outbox_running_means_claimed
        CHECK ((state = 'running') = (claimed_by IS NOT NULL AND lease_until IS NOT NULL)),
    CONSTRAINT outbox_key_has_sequence
        CHECK ((ordering_key IS NULL) = (sequence IS NULL))
) WITH (fillfactor = 80);
-- fillfactor 80: every claim, renewal and completion rewrites the row. Renewals change no indexed
-- column and can stay heap-only (HOT) with free space on the page; claims and completions change
-- state, which the partial indexes' predicates read, so they cannot, but still find room nearby.

COMMENT ON TABLE ${relay_schema}.outbox IS
    'Relay work: one row per intention, identified by work_id; see docs/protocol.md';

-- The claim path: eligible rows (ready, or running with a lease that may have expired) in claim
-- order. Partial, so done/failed/cancelled rows, which are most of a long-lived table, cost the
-- claim nothing.
CREATE INDEX outbox_claim_idx ON ${relay_schema}.outbox (queue, priority DESC, available_at, work_id)
    WHERE state IN ('ready', 'running');

-- Leases held by one worker: renewal, recovery after an uncertain claim commit, shutdown.
CREATE INDEX outbox_claimed_by_idx ON ${relay_schema}.outbox (claimed_by)
    WHERE state = 'running';

-- Unfinished keyed work in key order (ordered delivery).
CREATE INDEX outbox_key_sequence_idx ON ${relay_schema}.outbox (ordering_key, sequence)
    WHERE ordering_key IS NOT NULL AND state IN ('ready', 'running', 'failed');

-- Admin and retention queries: finished work by age, failures by kind.
CREATE INDEX outbox_finished_idx ON ${relay_schema}.outbox (state, completed_at)
    WHERE state IN ('done', 'failed', 'cancelled');

-- Work ID, kind and payload are the identity of an intention and never change after insert.
-- The trigger fires only when an UPDATE names one of those columns and changes it, so ordinary
-- state updates pay nothing. It stops mistakes, not an owner (who can disable it): real
-- protection is a producer role with INSERT only and a worker role limited to state columns.
CREATE FUNCTION ${relay_schema}.outbox_refuse_identity_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'relay: work_id, kind and payload of work % are immutable', OLD.work_id
        USING ERRCODE = '23514', HINT = 'enqueue a corrected intention under a new work ID';
END;
$$;

CREATE TRIGGER outbox_identity_is_immutable
    BEFORE UPDATE OF work_id, kind, payload ON ${relay_schema}.outbox
    FOR EACH ROW
    WHEN (OLD.work_id IS DISTINCT FROM NEW.work_id
          OR OLD.kind IS DISTINCT FROM NEW.kind
          OR OLD.payload IS DISTINCT FROM NEW.payload)
    EXECUTE FUNCTION ${relay_schema}.outbox_refuse_identity_change();

-- A payload in a canonical form for digests: numbers with their scale trimmed (29.00 and 29.0
-- are equal jsonb numbers, so they must digest alike), objects and arrays rebuilt recursively.
-- jsonb's own text form already orders keys and drops whitespace.
CREATE FUNCTION ${relay_schema}.jsonb_canonical(j jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN CASE jsonb_typeof(j)
        WHEN 'number' THEN to_jsonb(trim_scale(j::numeric))
        WHEN 'object' THEN (SELECT coalesce(jsonb_object_agg(e.key, ${relay_schema}.jsonb_canonical(e.value)), '{}'::jsonb)
                              FROM jsonb_each(j) AS e)
        WHEN 'array' THEN (SELECT coalesce(jsonb_agg(${relay_schema}.jsonb_canonical(a.value) ORDER BY a.n), '[]'::jsonb)
                             FROM jsonb_array_elements(j) WITH ORDINALITY AS a(value, n))
        ELSE j
    END;
END;
$$;

-- Hex SHA-256 of the canonical payload: equal for jsonb-equal payloads.
CREATE FUNCTION ${relay_schema}.payload_digest(j jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT encode(sha256(convert_to(${relay_schema}.jsonb_canonical(j)::text, 'UTF8')), 'hex')
$$;

-- One row per claim generation that ended other than in plain success: a retry, a failure, an
-- expired lease taken over, a stale write refused, a cancellation, a release.
CREATE TABLE ${relay_schema}.attempt (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_id     text        NOT NULL,
    generation  bigint      NOT NULL,
    worker      text,
    claimed_at  timestamptz,
    ended_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    ending      text        NOT NULL CHECK (ending IN
                    ('retry', 'failed', 'lease_expired', 'stale_write', 'cancelled', 'released')),
    error_kind  text,
    error       text,
    outcome     text        CHECK (outcome IN ('delivered', 'not_delivered', 'unknown'))
);
CREATE INDEX attempt_work_idx ON ${relay_schema}.attempt (work_id, generation);
CREATE INDEX attempt_ended_idx ON ${relay_schema}.attempt (ended_at);

-- Who restarted work, when and why.
CREATE TABLE ${relay_schema}.redrive_audit (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_id         text        NOT NULL,
    actor           text        NOT NULL,
    reason          text        NOT NULL,
    redriven_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state      text        NOT NULL,
    from_generation bigint      NOT NULL,
    forced          boolean     NOT NULL DEFAULT false
);
CREATE INDEX redrive_audit_work_idx ON ${relay_schema}.redrive_audit (work_id);

-- A corrected intention names the one it replaces.
CREATE TABLE ${relay_schema}.supersedes (
    work_id            text        PRIMARY KEY,
    supersedes_work_id text        NOT NULL,
    actor              text        NOT NULL,
    reason             text        NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX supersedes_old_idx ON ${relay_schema}.supersedes (supersedes_work_id);

-- Each kind's policy as the workers registered it, so tools apply the policy workers use.
CREATE TABLE ${relay_schema}.kind (
    kind                 text        PRIMARY KEY,
    backoff_base         interval    NOT NULL,
    backoff_cap          interval    NOT NULL,
    max_attempts         integer     NOT NULL CHECK (max_attempts > 0),
    max_elapsed          interval    NOT NULL,
    handler_timeout      interval    NOT NULL,
    dedup_horizon        interval    NOT NULL,
    unknown_outcome      text        NOT NULL CHECK (unknown_outcome IN ('retry', 'park', 'reconcile')),
    registered_by        text        NOT NULL,
    registered_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- What remains of purged work for the identity horizon: enough to recognise a late retry of
-- the same intention, refuse a different payload under its ID, and keep generations rising.
CREATE TABLE ${relay_schema}.tombstone (
    work_id         text        PRIMARY KEY,
    kind            text        NOT NULL,
    payload_digest  text        NOT NULL,
    last_generation bigint      NOT NULL,
    final_state     text        NOT NULL,
    outcome         text,
    purged_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX tombstone_purged_idx ON ${relay_schema}.tombstone (purged_at);

-- Per ordering key, the last sequence handed out (ordered delivery).
CREATE TABLE ${relay_schema}.key_sequence (
    ordering_key  text   PRIMARY KEY,
    last_sequence bigint NOT NULL
);

-- Per protected resource, the last fencing token handed out.
CREATE TABLE ${relay_schema}.fence_counter (
    resource   text   PRIMARY KEY,
    last_token bigint NOT NULL
);
