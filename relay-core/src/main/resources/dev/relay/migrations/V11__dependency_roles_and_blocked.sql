-- Relay schema, version 11: producers name dependencies without UPDATE on outbox or tombstone,
-- and blocked dependents are read through an index.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Enqueue, before the insert: which of the named IDs exist as work or as a tombstone, locking each
-- found row FOR KEY SHARE until the caller's transaction ends, so a concurrent purge (a DELETE)
-- waits instead of removing a dependency the new work is about to name. Rows are locked in ID
-- order, as every other multi-row lock. Returns each found ID once.
--
-- PostgreSQL allows a row lock only to a role with UPDATE on the table, which a producer must not
-- have. SECURITY DEFINER runs this one statement with the rights of the function's owner (the
-- role that ran this migration, the schema owner); the lock belongs to the caller's transaction
-- all the same. The search path is fixed and every name qualified, so a caller cannot substitute
-- its own tables or operators; EXECUTE is granted to producer roles only (see docs/protocol.md).
-- One SQL statement: a row deleted by a concurrent purge is not returned and its tombstone may not
-- be visible to this statement's snapshot yet; the caller looks such IDs up once more.
CREATE FUNCTION ${relay_schema}.lock_dependencies(ids text[]) RETURNS SETOF text
    LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH present AS (
        SELECT o.work_id FROM ${relay_schema}.outbox o
         WHERE o.work_id = ANY (ids)
         ORDER BY o.work_id
           FOR KEY SHARE
    ), kept AS (
        SELECT t.work_id FROM ${relay_schema}.tombstone t
         WHERE t.work_id = ANY (ids)
         ORDER BY t.work_id
           FOR KEY SHARE
    )
    SELECT work_id FROM present UNION SELECT work_id FROM kept
$$;

REVOKE ALL ON FUNCTION ${relay_schema}.lock_dependencies(text[]) FROM PUBLIC;

-- Dependents that wait (ready, with dependency rows): the set that status counts as blocked and
-- that a list of blocked work pages through, in the list's keyset order. has_dependencies never
-- changes after insert, so the index holds only work that waits now; everything else costs it
-- nothing. Built once here (a scan of the work table, under a lock that holds back writes while
-- it runs).
CREATE INDEX outbox_waiting_idx ON ${relay_schema}.outbox (created_at, work_id)
    WHERE has_dependencies AND state = 'ready';
