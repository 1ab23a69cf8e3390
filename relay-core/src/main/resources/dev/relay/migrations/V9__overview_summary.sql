-- Relay schema, version 9: a cheap overview and an audited purge.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Done and cancelled work is most of a long-lived table, so the overview does not count it live.
-- The maintenance leader (or Admin.refreshSummary) recounts it per (queue, kind) into this table
-- once per run, replacing every row in one transaction, and stamps the refresh in
-- finished_summary_refresh. Nothing on the claim or settle path writes here: a counter row that
-- every completion updated would be a hot row that serialises the workers.
CREATE TABLE ${relay_schema}.finished_summary (
    queue     text   NOT NULL,
    kind      text   NOT NULL,
    done      bigint NOT NULL CHECK (done >= 0),
    cancelled bigint NOT NULL CHECK (cancelled >= 0),
    PRIMARY KEY (queue, kind)
);
COMMENT ON TABLE ${relay_schema}.finished_summary IS
    'Relay overview: done and cancelled counts per (queue, kind) as of the last refresh';

-- One row: when the counts in finished_summary were taken (the start of the counting statement).
CREATE TABLE ${relay_schema}.finished_summary_refresh (
    only_row boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    as_of    timestamptz NOT NULL
);

-- Who purged (or asked for a dry run), why, under which policy, and what it removed or counted.
CREATE TABLE ${relay_schema}.purge_audit (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor        text        NOT NULL,
    reason       text        NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    dry_run      boolean     NOT NULL,
    policy       text        NOT NULL,
    work         bigint      NOT NULL,
    tombstones   bigint      NOT NULL,
    attempts     bigint      NOT NULL,
    audits       bigint      NOT NULL,
    complete     boolean     NOT NULL
);
CREATE INDEX purge_audit_requested_idx ON ${relay_schema}.purge_audit (requested_at);

-- Listing by error kind or by a doubtful outcome ("what failed with http_502", "what has an
-- unknown outcome") in keyset order. Partial, so only work that had an error, or whose outcome is
-- unknown or not delivered, pays for them; without them such a filter reads the whole table and
-- sorts it. The other list filters use outbox_created_idx (the keyset order), the claim and
-- finished-work indexes (by state) or outbox_key_all_idx (by key).
-- Built in the migration's transaction: on a large table this blocks writes while it builds (as
-- V5's index did). To avoid that, create both with CREATE INDEX CONCURRENTLY under these names
-- before migrating; IF NOT EXISTS then leaves them alone.
CREATE INDEX IF NOT EXISTS outbox_error_kind_idx
    ON ${relay_schema}.outbox (last_error_kind, created_at, work_id)
    WHERE last_error_kind IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_doubtful_outcome_idx
    ON ${relay_schema}.outbox (outcome, created_at, work_id)
    WHERE outcome IN ('unknown', 'not_delivered');

-- Listing failed work (the console's first filter) in keyset order. Failed work is usually the
-- newest and rarest, so walking outbox_created_idx from the oldest row would pass every finished
-- row first. Partial: only failed rows are in it, so claims and completions never touch it.
CREATE INDEX IF NOT EXISTS outbox_failed_created_idx
    ON ${relay_schema}.outbox (created_at, work_id)
    WHERE state = 'failed';
