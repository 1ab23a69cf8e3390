-- Relay schema: local hand-off. A process whose Relay handles a kind may insert new work of that
-- kind already claimed by its own worker, and start it right after the producer's commit, with no
-- claim round trip (docs/protocol.md, "Local hand-off").
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Which worker may hand off which kind on which queue, and the longest lease it may give such a
-- claim. Written by a worker at start when its hand-off is on, deleted when it closes (a crashed
-- worker's rows stay until a worker of the same ID starts again; its ID is unique per runtime, so
-- they only allow claims that expire after one lease). Read by the hand-off insert (only rows
-- registered here are inserted claimed) and by the trigger below.
CREATE TABLE ${relay_schema}.handoff (
    worker_id     text        NOT NULL CHECK (length(worker_id) BETWEEN 1 AND 200),
    kind          text        NOT NULL,
    queue         text        NOT NULL,
    lease         interval    NOT NULL CHECK (lease > interval '0' AND lease <= interval '1 day'),
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (worker_id, kind, queue)
);

-- The longest lease worker_id may give a new claim of kind on queue by hand-off, or NULL when it
-- may not hand that work off: not registered above, the kind is limited (a limited kind is only
-- ever taken by a claim, under its limiter's lock), or a pause (V13) holds the kind, the queue or
-- both, as it holds a claim. Reading pause takes its ACCESS SHARE lock until the producer's
-- transaction ends, so a pause waits for hand-offs in flight, as for claims, and hand-offs after
-- it see it. The hand-off insert asks it per row, and the
-- trigger below asks it again. SECURITY DEFINER, so that a producer needs EXECUTE on this one
-- function rather than SELECT on handoff and limiter; the search path is fixed and every name
-- qualified, as for lock_dependencies (V11).
CREATE FUNCTION ${relay_schema}.handoff_lease(worker_id text, kind text, queue text)
    RETURNS interval
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT h.lease FROM ${relay_schema}.handoff h
     WHERE h.worker_id = $1 AND h.kind = $2 AND h.queue = $3
       AND NOT EXISTS (SELECT 1 FROM ${relay_schema}.limiter l WHERE l.kind = $2)
       AND NOT EXISTS (SELECT 1 FROM ${relay_schema}.pause ps
                        WHERE (ps.queue IS NULL OR ps.queue = $3)
                          AND (ps.kind IS NULL OR ps.kind = $2)
                          AND (ps.resume_at IS NULL OR ps.resume_at > clock_timestamp()))
$$;

REVOKE ALL ON FUNCTION ${relay_schema}.handoff_lease(text, text, text) FROM PUBLIC;

-- Nobody can forge a claim by inserting it. A row inserted as running must be exactly what a
-- hand-off inserts: generation 1, one attempt, first attempt and claim time set, claimed by a
-- worker that handoff_lease allows for the row's kind and queue, with a lease no longer than the
-- one it returns from the database clock now, not paused, unkeyed, without dependencies, available
-- now. A row inserted as ready must be at generation 0 with no attempts. Rows inserted finished
-- (done, failed, cancelled: imports and fixtures) can never be claimed without an audited redrive,
-- so they pass. Everything else is refused with SQLState 23514.
--
-- SECURITY DEFINER: the inserting role (a producer) needs no SELECT on handoff, limiter or pause.
CREATE FUNCTION ${relay_schema}.outbox_check_inserted_claim() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    granted interval;
    now timestamptz := clock_timestamp();
    problem text;
BEGIN
    IF NEW.state IN ('done', 'failed', 'cancelled') THEN
        RETURN NEW;
    END IF;
    IF NEW.state = 'ready' THEN
        problem := format('generation %s and %s attempts; work is inserted ready at generation 0'
                          ' with no attempts', NEW.claim_generation, NEW.attempts);
    ELSE
        granted := ${relay_schema}.handoff_lease(NEW.claimed_by, NEW.kind, NEW.queue);
        problem := CASE
            WHEN EXISTS (SELECT 1 FROM ${relay_schema}.limiter l WHERE l.kind = NEW.kind) THEN
                format('kind %s is limited; only a claim may take it', NEW.kind)
            WHEN EXISTS (SELECT 1 FROM ${relay_schema}.pause ps
                          WHERE (ps.queue IS NULL OR ps.queue = NEW.queue)
                            AND (ps.kind IS NULL OR ps.kind = NEW.kind)
                            AND (ps.resume_at IS NULL OR ps.resume_at > now)) THEN
                format('kind %s on queue %s is paused; paused work is only inserted ready',
                       NEW.kind, NEW.queue)
            WHEN granted IS NULL THEN
                format('worker %s is not registered to hand off kind %s on queue %s',
                       NEW.claimed_by, NEW.kind, NEW.queue)
            WHEN NEW.claim_generation <> 1 THEN
                format('generation %s; a handed-off claim is generation 1', NEW.claim_generation)
            WHEN NEW.attempts <> 1 THEN
                format('%s attempts; a handed-off claim is the first attempt', NEW.attempts)
            WHEN NEW.lease_until > now + granted THEN
                format('lease until %s is longer than the registered %s from now (%s)',
                       NEW.lease_until, granted, now)
            WHEN NEW.claimed_at IS NULL OR NEW.first_attempt_at IS NULL THEN
                'claimed_at and first_attempt_at must be set'
            WHEN NEW.ordering_key IS NOT NULL THEN 'keyed work is never handed off'
            WHEN NEW.has_dependencies THEN 'work with dependencies is never handed off'
            WHEN NEW.available_at > now THEN 'work that is not available yet is never handed off'
            WHEN NEW.deadline IS NOT NULL AND NEW.deadline <= now THEN 'its deadline has passed'
            WHEN NEW.cancel_requested_at IS NOT NULL OR NEW.completed_at IS NOT NULL
                 OR NEW.outcome IS NOT NULL THEN 'a new claim has no cancel request or outcome'
        END;
    END IF;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'relay: work % cannot be inserted %: %', NEW.work_id, NEW.state, problem
            USING ERRCODE = '23514',
                  HINT = 'enqueue inserts work ready; only a local hand-off inserts it claimed';
    END IF;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION ${relay_schema}.outbox_check_inserted_claim() FROM PUBLIC;

-- Fires only for a row that is not plain new work, so an ordinary enqueue pays one comparison.
CREATE TRIGGER outbox_inserted_claim_is_a_handoff
    BEFORE INSERT ON ${relay_schema}.outbox
    FOR EACH ROW
    WHEN (NEW.state <> 'ready' OR NEW.claim_generation <> 0 OR NEW.attempts <> 0)
    EXECUTE FUNCTION ${relay_schema}.outbox_check_inserted_claim();
