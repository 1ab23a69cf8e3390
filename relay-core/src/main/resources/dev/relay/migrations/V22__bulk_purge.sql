-- Relay schema, version 22: bulk purge by filter (deletes every matching done or cancelled item,
-- leaving its tombstone), with one audit row per purged item.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- A bulk action may now be a purge. The check is replaced by a wider one (a small table: the
-- validation reads its few rows). An older release's console lists a purge row as an unknown
-- action; its workers never read this table.
ALTER TABLE ${relay_schema}.bulk_operation DROP CONSTRAINT bulk_operation_action_check;
ALTER TABLE ${relay_schema}.bulk_operation
    ADD CONSTRAINT bulk_operation_action_check CHECK (action IN ('redrive', 'cancel', 'purge'));

-- One row per item a bulk purge deleted: which work, which bulk action, who, why, when, and what
-- the row was (its state, last generation and outcome; the tombstone keeps the identity). Written
-- in the transaction that writes the tombstone and deletes the row. Purged after the history
-- retention, like purge_audit; it names work that no longer exists, so nothing else holds it.
CREATE TABLE ${relay_schema}.purge_item_audit (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    work_id         text        NOT NULL,
    bulk_id         bigint      NOT NULL,
    actor           text        NOT NULL,
    reason          text        NOT NULL,
    purged_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state      text        NOT NULL,
    last_generation bigint      NOT NULL,
    outcome         text
);
CREATE INDEX purge_item_audit_purged_idx ON ${relay_schema}.purge_item_audit (purged_at);
CREATE INDEX purge_item_audit_work_idx ON ${relay_schema}.purge_item_audit (work_id);

COMMENT ON TABLE ${relay_schema}.purge_item_audit IS
    'Relay: one row per item a bulk purge deleted (who, why, which bulk action); see docs/operations.md';
