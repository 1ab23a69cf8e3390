-- Relay schema, version 16: enqueue as an SQL function, for producers outside Java.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Expand only: a new function. A Python, Go or Node service, or a trigger, calls it inside its own
-- transaction and gets what Outbox.enqueue gives a Java producer: the same validation, an equal
-- repeat reported as 'already_enqueued' (jsonb equality), a conflict refused naming the ID (also
-- against a tombstone), dependencies checked and locked against a concurrent purge, and ordering
-- keys sequenced. One item per call; call it once per item in one transaction for a batch.
--
-- It mirrors the Java statements (WorkSql, DependencySql) step by step and is kept whole here, so
-- that it can be read, and run by Flyway or Liquibase, without the Java code.
--
-- Errors, raised before anything is written unless said otherwise (the caller rolls back):
--   22023 invalid_parameter_value  bad input, "invalid work 'ID': FIELD PROBLEM" as in Java
--   23505 unique_violation         the ID is used by a different intention (kind or payload);
--                                  DETAIL carries both digests
--   23503 foreign_key_violation    a dependency that is neither work nor a tombstone
--   40001 serialization_failure    a concurrent change of the same ID; retry the transaction
--
-- SECURITY INVOKER: it runs with the caller's own grants (the producer role's INSERT and SELECT);
-- EXECUTE is revoked from PUBLIC here and granted to the producer role by the operator (see the
-- roles block in docs/protocol.md).
CREATE FUNCTION ${relay_schema}.enqueue(
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
    SELECT o.kind, o.payload INTO stored_kind, stored_payload
      FROM ${relay_schema}.outbox o WHERE o.work_id = id;
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

REVOKE ALL ON FUNCTION ${relay_schema}.enqueue(text, text, jsonb, text, integer, timestamptz,
    interval, integer, timestamptz, text, text, text[], boolean) FROM PUBLIC;
