-- Relay schema, version 25: finished work leaves the work table for a history table partitioned
-- by completion day, so retention drops a day instead of deleting its rows one by one.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Expand only. A worker of this release completes or cancels work by moving its row: a guarded
-- DELETE from outbox and an INSERT into work_history in the same statement. Workers of earlier
-- releases keep setting 'done' in outbox; such rows stay there and retention purges them one by
-- one as before, so nothing an older release does is refused. Failed work stays in outbox (it
-- waits for a person). See docs/operations.md, section 17.
--
-- The identity of an ID is held, as before, by the work table or a tombstone: a move writes the
-- row's tombstone in the statement that files it, so enqueue (and the purged-ID trigger) probe two
-- unpartitioned indexes, however many days of history are retained, instead of every day's
-- partition (with a week retained, about eleven probes in the insert and as many in the trigger).
-- A finished ID is therefore in the history table and in the tombstone table; the tombstone stays
-- while the history row does (the tombstone purge spares every tombstone not older than the oldest
-- history row), and retiring a day only drops its partition. Readers that show a finished row read
-- the history table.

-- Finished work, one partition per UTC day of completed_at, created ahead by maintenance
-- (add_history_day). The columns are the work table's, in its order, so the work view below can
-- read both with one column list; a later version that adds a column to outbox adds it here too.
-- No primary key: a unique index across partitions would have to include completed_at. Uniqueness
-- comes from the checks above, as it does for tombstones across the two tables. Insert-only
-- until its day is dropped, so fillfactor 100 and no vacuum for dead rows.
CREATE TABLE ${relay_schema}.work_history
    (LIKE ${relay_schema}.outbox INCLUDING DEFAULTS)
    PARTITION BY RANGE (completed_at);
ALTER TABLE ${relay_schema}.work_history
    ALTER COLUMN completed_at SET NOT NULL,
    ADD CONSTRAINT work_history_finished CHECK (state IN ('done', 'cancelled'));
COMMENT ON TABLE ${relay_schema}.work_history IS
    'Relay finished work (done, cancelled), partitioned by UTC completion day; see docs/operations.md';

-- Identity (enqueue, the purged-ID trigger, Admin.get), the fold of the charts (completion order),
-- listing (creation order) and ordered delivery (the last delivered sequence of a key).
CREATE INDEX work_history_id_idx ON ${relay_schema}.work_history (work_id);
CREATE INDEX work_history_completed_idx ON ${relay_schema}.work_history (completed_at, work_id);
CREATE INDEX work_history_created_idx ON ${relay_schema}.work_history (created_at, work_id);
CREATE INDEX work_history_key_idx ON ${relay_schema}.work_history (ordering_key, sequence)
    WHERE ordering_key IS NOT NULL;
-- The list filters by error kind and by a doubtful outcome, in keyset order, as version 9's partial
-- indexes of outbox: only finished work that had an error, or whose outcome is not 'delivered',
-- has an entry, so most completions add nothing to them.
CREATE INDEX work_history_error_kind_idx
    ON ${relay_schema}.work_history (last_error_kind, created_at, work_id)
    WHERE last_error_kind IS NOT NULL;
CREATE INDEX work_history_doubtful_outcome_idx
    ON ${relay_schema}.work_history (outcome, created_at, work_id)
    WHERE outcome IN ('unknown', 'not_delivered');

-- Rows of a day that has no partition yet (maintenance stopped past the days it created ahead)
-- land here; add_history_day moves them into their day's partition when it creates it.
CREATE TABLE ${relay_schema}.work_history_default
    PARTITION OF ${relay_schema}.work_history DEFAULT;

-- All work, unfinished and finished, with the work table's columns: what readers use.
CREATE VIEW ${relay_schema}.work AS
    SELECT * FROM ${relay_schema}.outbox
    UNION ALL
    SELECT * FROM ${relay_schema}.work_history;

-- Creates the partition of one UTC day if it is missing (true) or does nothing (false). Rows of
-- that day already in the default partition move into it first, so attaching it never fails.
-- SECURITY DEFINER: the partition belongs to the schema owner; EXECUTE is the operator's
-- (maintenance). lock_timeout bounds the wait for the brief locks attaching takes.
CREATE FUNCTION ${relay_schema}.add_history_day(day date) RETURNS boolean
    LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '5s'
AS $$
DECLARE
    part CONSTANT text := 'work_history_' || to_char(day, 'YYYYMMDD');
    lo   CONSTANT timestamptz := day::timestamp AT TIME ZONE 'UTC';
    hi   CONSTANT timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
    IF to_regclass(format('%I.%I', '${relay_schema}', part)) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.work_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   '${relay_schema}', part, '${relay_schema}');
    EXECUTE format('WITH m AS (DELETE FROM %I.work_history_default WHERE completed_at >= %L AND completed_at < %L RETURNING *) INSERT INTO %I.%I SELECT * FROM m',
                   '${relay_schema}', lo, hi, '${relay_schema}', part);
    EXECUTE format('ALTER TABLE %I.work_history ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                   '${relay_schema}', '${relay_schema}', part, lo, hi);
    RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION ${relay_schema}.add_history_day(date) FROM PUBLIC;

-- Retires one UTC day of history: detaches and drops its partition, in the caller's transaction.
-- Every row's tombstone was written when it was filed; a row found without one (none should be)
-- gets it first, so no ID of the day is ever left unheld. Refuses (22023) a day that ends after
-- keep_until: the caller passes now minus the longest of the work retention and every
-- deduplication horizon. Returns the rows dropped, or NULL when the day has no partition.
CREATE FUNCTION ${relay_schema}.retire_history_day(day date, keep_until timestamptz)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '5s'
AS $$
DECLARE
    part CONSTANT text := 'work_history_' || to_char(day, 'YYYYMMDD');
    hi   CONSTANT timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
    n    bigint;
BEGIN
    IF hi > keep_until OR hi > clock_timestamp() THEN
        RAISE EXCEPTION 'relay: history day % ends at %, after %: it is still retained', day, hi,
            least(keep_until, clock_timestamp()) USING ERRCODE = '22023';
    END IF;
    IF to_regclass(format('%I.%I', '${relay_schema}', part)) IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT count(*) FROM %I.%I', '${relay_schema}', part) INTO n;
    EXECUTE format('INSERT INTO %I.tombstone (work_id, kind, payload_digest, last_generation, final_state, outcome, purged_at) SELECT h.work_id, h.kind, %I.payload_digest(h.payload), h.claim_generation, h.state, h.outcome, h.completed_at FROM %I.%I h WHERE NOT EXISTS (SELECT 1 FROM %I.tombstone t WHERE t.work_id = h.work_id) ON CONFLICT (work_id) DO NOTHING',
                   '${relay_schema}', '${relay_schema}', '${relay_schema}', part, '${relay_schema}');
    EXECUTE format('ALTER TABLE %I.work_history DETACH PARTITION %I.%I',
                   '${relay_schema}', '${relay_schema}', part);
    EXECUTE format('DROP TABLE %I.%I', '${relay_schema}', part);
    RETURN n;
END;
$$;
REVOKE ALL ON FUNCTION ${relay_schema}.retire_history_day(date, timestamptz) FROM PUBLIC;

-- Moves finished rows named by ID back from the history table into the work table, unchanged
-- (still done or cancelled), with the tombstones their moves wrote deleted, and returns the IDs it
-- moved: the first step of an operator's action
-- on finished work (a redrive, a purge of one item), which then runs on the work table exactly as
-- for a finished row an older worker left there. The DELETE waits for a producer's FOR KEY SHARE
-- on a dependency it is naming, and for a concurrent retire_history_day of the row's day.
-- SECURITY DEFINER: the operator inserts no work of its own (no INSERT on outbox); the rows come
-- back as they were, and version 18's insert check lets finished rows pass. EXECUTE: operator.
CREATE FUNCTION ${relay_schema}.reopen_history(ids text[]) RETURNS SETOF text
    LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH back AS (
        DELETE FROM ${relay_schema}.work_history h
         WHERE h.work_id = ANY (ids)
     RETURNING h.*
    ), freed AS (
        -- the work table holds the ID again: its tombstone (written by the move) goes
        DELETE FROM ${relay_schema}.tombstone t
         WHERE t.work_id IN (SELECT b.work_id FROM back b)
    )
    INSERT INTO ${relay_schema}.outbox
    SELECT * FROM back ORDER BY work_id
    RETURNING work_id
$$;
REVOKE ALL ON FUNCTION ${relay_schema}.reopen_history(text[]) FROM PUBLIC;

-- Today's partition and the next two, so the first completions need no maintenance run.
SELECT ${relay_schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date + d)
  FROM generate_series(0, 2) AS d;

-- A purged or finished ID stays refused: version 5's check, which a move now also answers. An
-- INSERT whose snapshot predates a move's commit waits for the moving transaction on the unique
-- index and then inserts (the row is gone from outbox, its tombstone invisible to its snapshot);
-- this check, with a fresh snapshot, sees the tombstone the move wrote and raises the
-- serialization failure. The repeat is then judged by the history row.
CREATE OR REPLACE FUNCTION ${relay_schema}.outbox_refuse_purged_id() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    purged text;
BEGIN
    SELECT n.work_id INTO purged
      FROM inserted_rows n
     WHERE EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t WHERE t.work_id = n.work_id)
     LIMIT 1;
    IF purged IS NOT NULL THEN
        RAISE EXCEPTION 'relay: work ID % finished or was purged (its tombstone holds it) while this insert ran', purged
            USING ERRCODE = '40001',
                  HINT = 'roll back and repeat the transaction; the stored intention then decides';
    END IF;
    RETURN NULL;
END;
$$;

-- Dependencies found in the history table are locked too, so retiring their day waits.
CREATE OR REPLACE FUNCTION ${relay_schema}.lock_dependencies(ids text[]) RETURNS SETOF text
    LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH present AS (
        SELECT o.work_id FROM ${relay_schema}.outbox o
         WHERE o.work_id = ANY (ids)
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
    SELECT work_id FROM present UNION SELECT work_id FROM finished UNION SELECT work_id FROM kept
$$;

-- The SQL enqueue of version 16: finished work in the history table is judged by its history row
-- (the work view); the tombstone its move wrote keeps the ID out of the insert.
CREATE OR REPLACE FUNCTION ${relay_schema}.enqueue(
    work_id      text,
    kind         text,
    payload      jsonb,
    queue        text        DEFAULT 'default',
    priority     integer     DEFAULT 0,
    available_at timestamptz DEFAULT NULL,
    delay        interval    DEFAULT NULL,
    max_attempts integer     DEFAULT NULL,
    deadline     timestamptz DEFAULT NULL,
    group_key    text        DEFAULT '',
    ordering_key text        DEFAULT NULL,
    depends_on   text[]      DEFAULT '{}',
    notify       boolean     DEFAULT true)
    RETURNS text   -- 'enqueued' or 'already_enqueued', as EnqueueResult.Status
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    id_chars   CONSTANT text := '^[A-Za-z0-9._\-:/@+=#]+$';
    name_chars CONSTANT text := '^[A-Za-z0-9._\-:]+$';
    id         CONSTANT text := enqueue.work_id;
    deps       text[] := coalesce(enqueue.depends_on, '{}');
    missing    text;
    added      text;
    stored_kind    text;
    stored_payload jsonb;
    tomb_kind      text;
    tomb_digest    text;
    requested_digest text;
BEGIN
    -- Validation, as Outbox.validate: nothing is written before it passes.
    IF id IS NULL OR id = '' THEN
        RAISE EXCEPTION 'invalid work: workId is empty' USING ERRCODE = '22023';
    ELSIF length(id) > 200 THEN
        RAISE EXCEPTION 'invalid work: workId has % characters; the limit is 200', length(id)
            USING ERRCODE = '22023';
    ELSIF id !~ id_chars THEN
        RAISE EXCEPTION 'invalid work: workId ''%'' may only contain A-Z a-z 0-9 . _ - : / @ + = #',
            id USING ERRCODE = '22023';
    END IF;
    IF enqueue.kind IS NULL OR enqueue.kind = '' THEN
        RAISE EXCEPTION 'invalid work ''%'': kind is empty', id USING ERRCODE = '22023';
    ELSIF length(enqueue.kind) > 100 OR enqueue.kind !~ name_chars THEN
        RAISE EXCEPTION 'invalid work ''%'': kind ''%'' must be 1-100 characters from A-Z a-z 0-9 . _ - :',
            id, enqueue.kind USING ERRCODE = '22023';
    END IF;
    IF enqueue.ordering_key IS NOT NULL
       AND (enqueue.ordering_key = '' OR length(enqueue.ordering_key) > 200
            OR enqueue.ordering_key !~ id_chars) THEN
        RAISE EXCEPTION 'invalid work ''%'': orderingKey ''%'' must be 1-200 characters from A-Z a-z 0-9 . _ - : / @ + = #',
            id, enqueue.ordering_key USING ERRCODE = '22023';
    END IF;
    IF enqueue.queue IS NULL OR enqueue.queue = '' THEN
        RAISE EXCEPTION 'invalid work ''%'': queue is empty', id USING ERRCODE = '22023';
    ELSIF length(enqueue.queue) > 100 OR enqueue.queue !~ name_chars THEN
        RAISE EXCEPTION 'invalid work ''%'': queue ''%'' must be 1-100 characters from A-Z a-z 0-9 . _ - :',
            id, enqueue.queue USING ERRCODE = '22023';
    END IF;
    IF enqueue.group_key IS NULL OR length(enqueue.group_key) > 200
       OR NOT (enqueue.group_key = '' OR enqueue.group_key ~ id_chars) THEN
        RAISE EXCEPTION 'invalid work ''%'': group ''%'' must be empty (no group) or 1-200 characters from A-Z a-z 0-9 . _ - : / @ + = #',
            id, enqueue.group_key USING ERRCODE = '22023';
    END IF;
    IF cardinality(deps) > 100 THEN
        RAISE EXCEPTION 'invalid work ''%'': dependsOn names % work items; the limit is 100',
            id, cardinality(deps) USING ERRCODE = '22023';
    END IF;
    FOREACH missing IN ARRAY deps LOOP
        IF missing IS NULL OR missing = '' OR length(missing) > 200 OR missing !~ id_chars THEN
            RAISE EXCEPTION 'invalid work ''%'': dependsOn ''%'' must be a work ID: 1-200 characters from A-Z a-z 0-9 . _ - : / @ + = #',
                id, missing USING ERRCODE = '22023';
        ELSIF missing = id THEN
            RAISE EXCEPTION 'invalid work ''%'': dependsOn names the work itself', id
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
    IF enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'invalid work ''%'': payload is null', id USING ERRCODE = '22023';
    ELSIF octet_length(enqueue.payload::text) > 1048576 THEN
        RAISE EXCEPTION 'invalid work ''%'': payload has % bytes of UTF-8; the limit is 1048576',
            id, octet_length(enqueue.payload::text) USING ERRCODE = '22023';
    END IF;
    IF enqueue.max_attempts IS NOT NULL AND enqueue.max_attempts NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'invalid work ''%'': maxAttempts must be between 1 and 10000, was %',
            id, enqueue.max_attempts USING ERRCODE = '22023';
    END IF;
    IF enqueue.delay IS NOT NULL
       AND (enqueue.delay < interval '0' OR enqueue.delay > interval '36500 days') THEN
        RAISE EXCEPTION 'invalid work ''%'': delay must be between zero and 100 years, was %',
            id, enqueue.delay USING ERRCODE = '22023';
    END IF;
    IF enqueue.available_at IS NOT NULL
       AND enqueue.available_at NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 00:00:00+00' THEN
        RAISE EXCEPTION 'invalid work ''%'': availableAt % is outside the years 1970 to 9999 that Relay accepts',
            id, enqueue.available_at USING ERRCODE = '22023';
    END IF;
    IF enqueue.deadline IS NOT NULL
       AND enqueue.deadline NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 00:00:00+00' THEN
        RAISE EXCEPTION 'invalid work ''%'': deadline % is outside the years 1970 to 9999 that Relay accepts',
            id, enqueue.deadline USING ERRCODE = '22023';
    END IF;
    IF enqueue.deadline IS NOT NULL AND enqueue.available_at IS NOT NULL
       AND enqueue.deadline <= enqueue.available_at THEN
        RAISE EXCEPTION 'invalid work ''%'': deadline % is not after availableAt %: it could never run',
            id, enqueue.deadline, enqueue.available_at USING ERRCODE = '22023';
    END IF;

    -- Dependencies: locked FOR KEY SHARE until the transaction ends, so a purge waits; one looked
    -- for once more in a new statement before it is refused (purged between the statement's two
    -- reads: the row deleted, its tombstone not yet visible), as Enqueuer.requireDependencies.
    IF cardinality(deps) > 0 THEN
        SELECT min(d) INTO missing FROM unnest(deps) AS d
         WHERE d NOT IN (SELECT f FROM ${relay_schema}.lock_dependencies(deps) AS f);
        IF missing IS NOT NULL THEN
            SELECT min(d) INTO missing FROM unnest(deps) AS d
             WHERE d NOT IN (SELECT f FROM ${relay_schema}.lock_dependencies(deps) AS f);
        END IF;
        IF missing IS NOT NULL THEN
            RAISE EXCEPTION 'work ''%'' depends on ''%'', which is neither enqueued, nor the tombstone of purged work, nor in this call',
                id, missing USING ERRCODE = '23503';
        END IF;
    END IF;

    IF enqueue.ordering_key IS NOT NULL THEN
        -- Step one: lock the key's counter (creating it), so producers of one key serialise here.
        INSERT INTO ${relay_schema}.key_sequence AS k (ordering_key, last_sequence)
        VALUES (enqueue.ordering_key, 0)
            ON CONFLICT (ordering_key) DO UPDATE SET last_sequence = k.last_sequence;
        -- Step two, a later statement (it sees what the previous holder committed): an ID already
        -- stored or tombstoned takes no sequence, so an idempotent repeat consumes none.
        IF NOT EXISTS (SELECT 1 FROM ${relay_schema}.outbox o WHERE o.work_id = id)
           AND NOT EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t WHERE t.work_id = id) THEN
            WITH bumped AS (
                UPDATE ${relay_schema}.key_sequence k SET last_sequence = k.last_sequence + 1
                 WHERE k.ordering_key = enqueue.ordering_key
             RETURNING k.last_sequence
            )
            INSERT INTO ${relay_schema}.outbox
                   (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline,
                    group_key, has_dependencies, ordering_key, sequence)
            SELECT id, enqueue.kind, enqueue.payload, enqueue.queue, enqueue.priority,
                   coalesce(enqueue.available_at,
                            clock_timestamp() + coalesce(enqueue.delay, interval '0')),
                   enqueue.max_attempts, enqueue.deadline, enqueue.group_key,
                   cardinality(deps) > 0, enqueue.ordering_key, b.last_sequence
              FROM bumped b
                ON CONFLICT (work_id) DO NOTHING
            RETURNING work_id INTO added;
        END IF;
    ELSE
        INSERT INTO ${relay_schema}.outbox
               (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline,
                group_key, has_dependencies)
        SELECT id, enqueue.kind, enqueue.payload, enqueue.queue, enqueue.priority,
               coalesce(enqueue.available_at,
                        clock_timestamp() + coalesce(enqueue.delay, interval '0')),
               enqueue.max_attempts, enqueue.deadline, enqueue.group_key, cardinality(deps) > 0
         WHERE NOT EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t WHERE t.work_id = id)
            ON CONFLICT (work_id) DO NOTHING
        RETURNING work_id INTO added;
    END IF;

    IF added IS NOT NULL THEN
        INSERT INTO ${relay_schema}.dependency (work_id, depends_on)
        SELECT id, d FROM (SELECT DISTINCT d FROM unnest(deps) AS d) AS x ORDER BY d
            ON CONFLICT DO NOTHING;
        IF enqueue.notify THEN
            -- constant payload: one delivery per transaction at COMMIT, as the Java enqueue
            PERFORM pg_notify('relay_${relay_schema}', '');
        END IF;
        RETURN 'enqueued';
    END IF;

    -- Not inserted: compare with what holds the ID, in a later statement (one statement cannot
    -- see a row that a concurrent transaction inserted). Equality is jsonb equality.
    -- The work view: the work table, then finished work in its history table.
    SELECT o.kind, o.payload INTO stored_kind, stored_payload
      FROM ${relay_schema}.work o WHERE o.work_id = id LIMIT 1;
    IF FOUND THEN
        IF stored_kind = enqueue.kind AND stored_payload = enqueue.payload THEN
            RETURN 'already_enqueued';
        END IF;
        RAISE EXCEPTION 'work ID ''%'' is already used by a different intention: stored kind % payload sha256:%, requested kind % payload sha256:%; roll back, and use a new work ID for a corrected intention',
            id, stored_kind, ${relay_schema}.payload_digest(stored_payload), enqueue.kind,
            ${relay_schema}.payload_digest(enqueue.payload)
            USING ERRCODE = '23505',
                  DETAIL = format('stored_kind=%s stored_digest=%s requested_kind=%s requested_digest=%s purged=false',
                                  stored_kind, ${relay_schema}.payload_digest(stored_payload),
                                  enqueue.kind, ${relay_schema}.payload_digest(enqueue.payload));
    END IF;
    SELECT t.kind, t.payload_digest INTO tomb_kind, tomb_digest
      FROM ${relay_schema}.tombstone t WHERE t.work_id = id;
    IF NOT FOUND THEN
        -- Skipped by ON CONFLICT, yet gone now: deleted by a concurrent transaction.
        RAISE EXCEPTION 'work ID ''%'' changed concurrently during enqueue; retry the transaction', id
            USING ERRCODE = '40001';
    END IF;
    requested_digest := ${relay_schema}.payload_digest(enqueue.payload);
    IF tomb_kind = enqueue.kind AND tomb_digest = requested_digest THEN
        RETURN 'already_enqueued';
    END IF;
    RAISE EXCEPTION 'work ID ''%'' is already used by a different intention (purged; its tombstone remains): stored kind % payload sha256:%, requested kind % payload sha256:%; roll back, and use a new work ID for a corrected intention',
        id, tomb_kind, tomb_digest, enqueue.kind, requested_digest
        USING ERRCODE = '23505',
              DETAIL = format('stored_kind=%s stored_digest=%s requested_kind=%s requested_digest=%s purged=true',
                              tomb_kind, tomb_digest, enqueue.kind, requested_digest);
END;
$fn$;

-- Roles granted for an earlier release keep working after this upgrade (as version 19 did for
-- trace_context): their statements now read and write the history table. A role is told apart by
-- what it already holds on outbox (membership counts, as PostgreSQL checks it):
--   a worker (UPDATE of claim_generation): moves rows at completion, so SELECT and INSERT on
--     work_history, INSERT on tombstone, DELETE on outbox, SELECT on the view;
--   an operator (DELETE on outbox, no claim_generation): SELECT and DELETE on work_history (a
--     redrive moves rows back through reopen_history), SELECT on the view, and the day functions;
--   any role that reads the identity columns (a producer: enqueue and the purged-ID trigger look in
--     work_history): SELECT of work_id, kind and payload on work_history and on the view.
-- Superusers and the schema's owner need nothing. `relay migrate --roles` then replaces all of it
-- with exactly the grant catalog's privileges.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT quote_ident(rolname) AS name, oid FROM pg_roles
         WHERE NOT rolsuper AND rolname NOT LIKE 'pg\_%'
           AND oid <> (SELECT nspowner FROM pg_namespace WHERE nspname = '${relay_schema}')
    LOOP
        IF has_column_privilege(r.oid, '${relay_schema}.outbox', 'claim_generation', 'UPDATE') THEN
            EXECUTE 'GRANT SELECT, INSERT ON ${relay_schema}.work_history TO ' || r.name;
            EXECUTE 'GRANT INSERT ON ${relay_schema}.tombstone TO ' || r.name;
            EXECUTE 'GRANT SELECT ON ${relay_schema}.work TO ' || r.name;
            EXECUTE 'GRANT DELETE ON ${relay_schema}.outbox TO ' || r.name;
        ELSIF has_table_privilege(r.oid, '${relay_schema}.outbox', 'DELETE') THEN
            EXECUTE 'GRANT SELECT, DELETE ON ${relay_schema}.work_history TO ' || r.name;
            EXECUTE 'GRANT SELECT ON ${relay_schema}.work TO ' || r.name;
            EXECUTE 'GRANT EXECUTE ON FUNCTION ${relay_schema}.add_history_day(date),'
                    ' ${relay_schema}.retire_history_day(date, timestamptz),'
                    ' ${relay_schema}.reopen_history(text[]) TO ' || r.name;
        ELSIF has_column_privilege(r.oid, '${relay_schema}.outbox', 'payload', 'SELECT') THEN
            EXECUTE 'GRANT SELECT (work_id, kind, payload) ON ${relay_schema}.work_history TO '
                    || r.name;
            EXECUTE 'GRANT SELECT (work_id, kind, payload) ON ${relay_schema}.work TO ' || r.name;
        END IF;
    END LOOP;
END
$$;
