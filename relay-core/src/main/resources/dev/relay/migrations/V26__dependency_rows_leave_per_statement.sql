-- Relay schema, version 26: a work row's dependency rows leave with it, once per statement.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Version 10 made dependency.work_id a foreign key to outbox with ON DELETE CASCADE. PostgreSQL
-- checks such a key with a trigger per deleted row, which runs a DELETE on the dependency table
-- for every row that leaves outbox, with or without dependencies. Since version 25 every
-- completion deletes its rows from outbox (they move to the history table), so each finished job
-- paid for that query: about a sixth of the completion statement's time per row (docs/
-- performance.md, "What bounds a backlog, and two costs removed").
--
-- The key is replaced by one trigger per statement: it reads the deleted rows once and deletes
-- the dependency rows of those enqueued with dependencies (has_dependencies, set at enqueue and
-- never changed), so a statement that deletes no such row runs no query on the dependency table.
-- Every path that deletes from outbox is covered as before, Relay's (completion, cancel, purge)
-- and an operator's own DELETE. What the key also checked at insert (the dependent row exists)
-- is kept by the one writer of dependency rows: enqueue inserts them in the statement that
-- inserts their work row. TRUNCATE of outbox no longer reaches the dependency table; truncate
-- both. Workers of earlier releases need nothing of the key: they delete work rows, and the
-- trigger removes the dependency rows as the cascade did.

ALTER TABLE ${relay_schema}.dependency DROP CONSTRAINT IF EXISTS dependency_work_id_fkey;

-- SECURITY DEFINER: the cascade ran with the table owner's rights, so a role that may delete work
-- rows (a worker, an operator) needs no DELETE on the dependency table.
CREATE OR REPLACE FUNCTION ${relay_schema}.outbox_drop_dependencies() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- = ANY (ARRAY(...)): primary-key probes whatever the estimate of the deleted rows, never a
    -- scan of the dependency table; an empty array (no deleted row had dependencies) finds none.
    DELETE FROM ${relay_schema}.dependency d
     WHERE d.work_id = ANY (ARRAY(SELECT g.work_id FROM deleted_rows g
                                   WHERE g.has_dependencies));
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION ${relay_schema}.outbox_drop_dependencies() FROM PUBLIC;

DROP TRIGGER IF EXISTS outbox_dependencies_leave_with_row ON ${relay_schema}.outbox;
CREATE TRIGGER outbox_dependencies_leave_with_row
    AFTER DELETE ON ${relay_schema}.outbox
    REFERENCING OLD TABLE AS deleted_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION ${relay_schema}.outbox_drop_dependencies();
