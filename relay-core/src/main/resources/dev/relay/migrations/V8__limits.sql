-- Relay schema, version 8: global concurrency and rate limits per kind.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- One row per limited kind, written by the workers at start (the last registration wins), read
-- by every claim of the kind. A claim of a limited kind locks this row (FOR UPDATE, waiting: not
-- SKIP LOCKED) and only then, in a later statement, counts the kind's live claims: so claims of
-- one limited kind are serialised, and each counts what the previous one committed.
CREATE TABLE ${relay_schema}.limiter (
    kind                  text        PRIMARY KEY,
    -- At most this many live claims (running with an unexpired lease) of the kind; NULL: none.
    max_running           int         CHECK (max_running > 0),
    -- At most this many live claims of the kind per group key; NULL: none.
    max_running_per_group int         CHECK (max_running_per_group > 0),
    -- At most rate_limit claims with claimed_at within rate_interval; both NULL: none.
    rate_limit            int         CHECK (rate_limit > 0),
    rate_interval         interval    CHECK (rate_interval >= interval '1 second'),
    registered_by         text,
    registered_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((rate_limit IS NULL) = (rate_interval IS NULL))
);

-- The group a work item counts against for a per-group limit ('' : no group). Set at enqueue and
-- immutable like the kind. Adding a column with a constant default rewrites nothing, and a check
-- added NOT VALID does not scan the existing rows (they all hold '').
ALTER TABLE ${relay_schema}.outbox ADD COLUMN group_key text NOT NULL DEFAULT '';
ALTER TABLE ${relay_schema}.outbox
    ADD CONSTRAINT outbox_group_key_length CHECK (length(group_key) <= 200) NOT VALID;

DROP TRIGGER outbox_identity_is_immutable ON ${relay_schema}.outbox;

CREATE OR REPLACE FUNCTION ${relay_schema}.outbox_refuse_identity_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'relay: work_id, kind, group_key and payload of work % are immutable',
        OLD.work_id
        USING ERRCODE = '23514', HINT = 'enqueue a corrected intention under a new work ID';
END;
$$;

CREATE TRIGGER outbox_identity_is_immutable
    BEFORE UPDATE OF work_id, kind, payload, group_key ON ${relay_schema}.outbox
    FOR EACH ROW
    WHEN (OLD.work_id IS DISTINCT FROM NEW.work_id
          OR OLD.kind IS DISTINCT FROM NEW.kind
          OR OLD.payload IS DISTINCT FROM NEW.payload
          OR OLD.group_key IS DISTINCT FROM NEW.group_key)
    EXECUTE FUNCTION ${relay_schema}.outbox_refuse_identity_change();

-- Live claims per (kind, group), counted by every claim of a limited kind.
CREATE INDEX outbox_running_group_idx ON ${relay_schema}.outbox (kind, group_key)
    WHERE state = 'running';

-- One row per claim of a rate-limited kind, for the sliding window: a claim released or
-- reclaimed later still counts. The claim statement purges rows an hour past the kind's interval.
CREATE TABLE ${relay_schema}.claim_log (
    kind        text        NOT NULL,
    group_key   text        NOT NULL,
    work_id     text        NOT NULL,
    claimed_at  timestamptz NOT NULL
);

CREATE INDEX claim_log_window_idx ON ${relay_schema}.claim_log (kind, claimed_at);
