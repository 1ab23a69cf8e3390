-- Relay schema, version 4: what the admin API and retention add.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Listing work in keyset order (created_at, work_id). created_at never changes after insert, so
-- this index does not stop state updates from being heap-only (HOT).
CREATE INDEX outbox_created_idx ON ${relay_schema}.outbox (created_at, work_id);

-- A purged ID stays refused. Enqueue skips IDs that have a tombstone (NOT EXISTS) and compares
-- them afterwards, but one case escapes it: an INSERT whose snapshot predates a purge's commit
-- finds the row being deleted, waits for the purge on the unique index, and, once the purge
-- commits, inserts, because the row is gone and the tombstone was invisible to its snapshot.
-- This statement-level check runs after the insert with a fresh snapshot (READ COMMITTED), sees
-- the tombstone and raises a serialization failure: the producer rolls back and repeats, and the
-- repeat is judged by the tombstone (same payload: already enqueued; another: a conflict). It
-- also stops a hand-written INSERT (the article's) from reusing a purged ID. One execution per
-- statement, joining only the rows that statement inserted.
CREATE FUNCTION ${relay_schema}.outbox_refuse_purged_id() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    purged text;
BEGIN
    SELECT n.work_id INTO purged
      FROM inserted_rows n
      JOIN ${relay_schema}.tombstone t ON t.work_id = n.work_id
     LIMIT 1;
    IF purged IS NOT NULL THEN
        RAISE EXCEPTION 'relay: work ID % was purged (a tombstone holds it) while this insert ran', purged
            USING ERRCODE = '40001',
                  HINT = 'roll back and repeat the transaction; the tombstone then decides';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_purged_id_is_refused
    AFTER INSERT ON ${relay_schema}.outbox
    REFERENCING NEW TABLE AS inserted_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION ${relay_schema}.outbox_refuse_purged_id();
