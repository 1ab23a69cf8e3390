-- Relay schema, version 28: a producer naming live work as a dependency no longer locks that row.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Since version 11 an enqueue that names dependencies locked each one it found FOR KEY SHARE until
-- the producer's transaction ended, so that a purge (a DELETE) could not remove a dependency the
-- new work was about to name. A FOR KEY SHARE lock also holds off every FOR UPDATE and DELETE of
-- the row: the worker's renewal and settle guards, the settle's move to history, and the claim
-- (FOR UPDATE SKIP LOCKED skipped a ready dependency). A producer whose transaction stayed open
-- longer than a lease made the worker holding the dependency lose its lease, and with it every
-- lease renewed in the same statement: the work ran twice.
--
-- Ready and running work cannot be purged (a purge deletes finished work only), and finishing
-- moves it to the history table, whose rows are locked as before, or leaves it in the work table
-- finished, which a purge deletes only once its retention has passed, writing a tombstone that the
-- claim reads as the dependency's final state. So a live row needs no lock: only finished rows of
-- the work table, the history table and the tombstones are locked, as before. Should a dependency
-- vanish entirely all the same, the claim holds its dependent (dependency_missing), visibly; it
-- never runs it early.
--
-- Same signature and result: producers of an earlier release call it unchanged.

CREATE OR REPLACE FUNCTION ${relay_schema}.lock_dependencies(ids text[]) RETURNS SETOF text
    LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH live AS (
        SELECT o.work_id FROM ${relay_schema}.outbox o
         WHERE o.work_id = ANY (ids)
           AND o.state IN ('ready', 'running')
    ), settled AS (
        SELECT o.work_id FROM ${relay_schema}.outbox o
         WHERE o.work_id = ANY (ids)
           AND o.state NOT IN ('ready', 'running')
         ORDER BY o.work_id
           FOR KEY SHARE
    ), finished AS (
        SELECT h.work_id FROM ${relay_schema}.work_history h
         WHERE h.work_id = ANY (ids)
         ORDER BY h.work_id
           FOR KEY SHARE
    ), kept AS (
        SELECT t.work_id FROM ${relay_schema}.tombstone t
         WHERE t.work_id = ANY (ids)
         ORDER BY t.work_id
           FOR KEY SHARE
    )
    SELECT work_id FROM live
    UNION SELECT work_id FROM settled
    UNION SELECT work_id FROM finished
    UNION SELECT work_id FROM kept
$$;
