-- Relay schema, version 21: bulk actions by filter (redrive or cancel every matching item).
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- One row per bulk action: its filter, action, actor and reason, how far it got and what it counted.
-- It is worked through in batches, each one transaction that locks and checks its items, writes one
-- audit row per item (redrive_audit or cancel_audit) and moves this row's cursor and counts; so the
-- row always says exactly which items were handled, and a rerun continues after the cursor. Items
-- created after created_at are not part of it. Expand only: nothing of an older release reads it.
CREATE TABLE ${relay_schema}.bulk_operation (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action             text        NOT NULL CHECK (action IN ('redrive', 'cancel')),
    -- redrive: also work that is not failed (never running work)
    force              boolean     NOT NULL DEFAULT false,
    -- the filter (dev.relay.admin.WorkFilter); NULL: any
    f_state            text,
    f_kind             text,
    f_queue            text,
    f_ordering_key     text,
    f_older_than       interval,
    f_newer_than       interval,
    f_error_kind       text,
    f_outcome          text,
    f_blocked_only     boolean     NOT NULL DEFAULT false,
    f_blocked_reason   text,
    actor              text        NOT NULL,
    reason             text        NOT NULL,
    state              text        NOT NULL DEFAULT 'running'
                                   CHECK (state IN ('running', 'done', 'stopped')),
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at        timestamptz,
    -- the keyset position of the last item handled (creation time, work ID)
    after_created_at   timestamptz,
    after_work_id      text,
    batches            bigint      NOT NULL DEFAULT 0,
    handled            bigint      NOT NULL DEFAULT 0,
    changed            bigint      NOT NULL DEFAULT 0,
    -- cancel of running work: asked to stop at its next renewal
    requested          bigint      NOT NULL DEFAULT 0,
    refused_running    bigint      NOT NULL DEFAULT 0,
    refused_horizon    bigint      NOT NULL DEFAULT 0,
    refused_state      bigint      NOT NULL DEFAULT 0,
    -- purged between the selection and the lock
    gone               bigint      NOT NULL DEFAULT 0
);
CREATE INDEX bulk_operation_created_idx ON ${relay_schema}.bulk_operation (created_at);

COMMENT ON TABLE ${relay_schema}.bulk_operation IS
    'Relay: bulk redrive and cancel by filter, with progress; see docs/console.md';
