-- Relay schema, version 27: a role that may not delete history may delete a work row only by
-- moving it to the history table.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Since version 25 a worker's settle moves a done or cancelled row from outbox to work_history
-- (a DELETE and an INSERT in one statement), so the worker role holds DELETE on outbox. That grant
-- alone would let a worker delete any row, ready work included, with no history row, no tombstone
-- and no audit: the record gone, and the ID free for other work. This trigger, once per deleting
-- statement, refuses a statement that deleted a row of outbox without filing it in work_history
-- in the same statement (a row completed at or after the transaction's start: only today's and
-- later partitions are read), unless the deleting role may also delete history (the operator, the
-- schema's owner, a superuser): those delete work by design (purge, cancel) and are audited where
-- the docs say. Not SECURITY DEFINER: the privilege test is the caller's, and the caller reads
-- work_history (the worker and the operator may).
--
-- A worker of an earlier release settles the same way (a move) and passes; nothing else changes.

CREATE OR REPLACE FUNCTION ${relay_schema}.outbox_refuse_unfiled_delete() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    unfiled text;
BEGIN
    IF has_table_privilege('${relay_schema}.work_history', 'DELETE') THEN
        RETURN NULL;
    END IF;
    SELECT g.work_id INTO unfiled
      FROM deleted_rows g
     WHERE NOT EXISTS (SELECT 1 FROM ${relay_schema}.work_history h
                        WHERE h.work_id = g.work_id
                          AND h.completed_at >= now())
     LIMIT 1;
    IF unfiled IS NOT NULL THEN
        RAISE EXCEPTION 'relay: % may not delete work %: a worker removes work only by filing it as finished (settle); deleting work is an operator''s action',
                        current_user, unfiled
              USING ERRCODE = '42501';
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION ${relay_schema}.outbox_refuse_unfiled_delete() FROM PUBLIC;

DROP TRIGGER IF EXISTS outbox_deletes_are_filed ON ${relay_schema}.outbox;
CREATE TRIGGER outbox_deletes_are_filed
    AFTER DELETE ON ${relay_schema}.outbox
    REFERENCING OLD TABLE AS deleted_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION ${relay_schema}.outbox_refuse_unfiled_delete();
