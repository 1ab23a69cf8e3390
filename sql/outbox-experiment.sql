-- outbox-experiment.sql: checks, in one session, that an order and its outbox row share one
-- commit outcome, and that the claim guards hold. For a DISPOSABLE database only:
--
--     psql -v ON_ERROR_STOP=1 -f sql/outbox-experiment.sql
--
-- Everything it creates is TEMPORARY and vanishes with the session. Each check prints "ok: ..."
-- or raises an error, which (with ON_ERROR_STOP) makes psql exit non-zero. It runs on one
-- connection, so it shows the rules, not concurrency: a second session is what SKIP LOCKED is for.

\set QUIET on
-- Query results are not the point: hide them; the checks speak through NOTICE and errors.
\o /dev/null
SET client_min_messages = notice;
\echo '== outbox experiment: temporary tables in this session only'

-- Fails loudly when a check does not hold; says what it checked when it does.
CREATE FUNCTION pg_temp.check_that(holds boolean, what text) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF holds IS DISTINCT FROM true THEN
    RAISE EXCEPTION 'CHECK FAILED: %', what;
  END IF;
  RAISE NOTICE 'ok: %', what;
END
$fn$;

CREATE TEMPORARY TABLE stock (
  sku      text PRIMARY KEY,
  quantity integer NOT NULL CHECK (quantity >= 0)
);
CREATE TEMPORARY TABLE orders (
  order_id    bigint PRIMARY KEY,
  customer_id bigint NOT NULL,
  total       numeric(10,2) NOT NULL,
  status      text NOT NULL
);
-- The work table keeps Relay's column names; only what these checks need.
CREATE TEMPORARY TABLE outbox (
  work_id          text PRIMARY KEY,
  kind             text NOT NULL,
  payload          jsonb NOT NULL,
  state            text NOT NULL DEFAULT 'ready'
                   CHECK (state IN ('ready', 'running', 'done', 'failed', 'cancelled')),
  available_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  claim_generation bigint NOT NULL DEFAULT 0,
  claimed_by       text,
  lease_until      timestamptz,
  completed_at     timestamptz,
  -- A running row always names its owner and lease; any other row names neither.
  CHECK ((state = 'running') = (claimed_by IS NOT NULL AND lease_until IS NOT NULL))
);
INSERT INTO stock VALUES ('P3', 11), ('P7', 0), ('P9', 6);

\echo '== 1. the purchase boundary'

-- Order 103 and its acknowledgement in one transaction, committed.
BEGIN;
INSERT INTO orders VALUES (103, 1, 29.00, 'pending');
UPDATE stock SET quantity = quantity - 1 WHERE sku = 'P3';
UPDATE stock SET quantity = quantity - 2 WHERE sku = 'P9';
INSERT INTO outbox (work_id, kind, payload)
VALUES ('order-103-ack', 'order_received',
        '{"order_id": 103, "customer_id": 1, "total": "29.00", "template_version": 1}');
COMMIT;

SELECT pg_temp.check_that(
  (SELECT count(*) FROM orders WHERE order_id = 103) = 1
  AND (SELECT count(*) FROM outbox WHERE work_id = 'order-103-ack') = 1,
  'COMMIT kept both the order and its outbox row');
SELECT pg_temp.check_that(
  (SELECT string_agg(sku || '=' || quantity, ' ' ORDER BY sku) FROM stock) = 'P3=10 P7=0 P9=4',
  'stock after order 103 is P3=10 P7=0 P9=4');

-- A second purchase whose transaction is abandoned: neither row may survive.
BEGIN;
INSERT INTO orders VALUES (104, 1, 35.00, 'pending');
INSERT INTO outbox (work_id, kind, payload)
VALUES ('order-104-ack', 'order_received', '{"order_id": 104}');
ROLLBACK;

SELECT pg_temp.check_that(
  NOT EXISTS (SELECT 1 FROM orders WHERE order_id = 104)
  AND NOT EXISTS (SELECT 1 FROM outbox WHERE work_id = 'order-104-ack'),
  'ROLLBACK kept neither the order nor its outbox row');

\echo '== 2. the claim guards'

-- claim(worker, lease): one short statement. The CTE picks eligible rows and locks them, skipping
-- rows another session holds; the UPDATE takes the lease and the next generation while the locks
-- are held. clock_timestamp(), not now(): the decision uses the time of this statement.
CREATE FUNCTION pg_temp.claim(worker text, lease interval)
RETURNS TABLE (work_id text, generation bigint)
LANGUAGE sql AS $fn$
  WITH eligible AS MATERIALIZED (
    SELECT o.work_id
    FROM outbox o
    WHERE o.state IN ('ready', 'running')
      AND o.available_at <= clock_timestamp()
      AND (o.lease_until IS NULL OR o.lease_until <= clock_timestamp())
    ORDER BY o.available_at, o.work_id
    LIMIT 10
    FOR UPDATE SKIP LOCKED
  )
  UPDATE outbox AS o
  SET state = 'running',
      claimed_by = worker,
      claim_generation = o.claim_generation + 1,
      lease_until = clock_timestamp() + lease
  FROM eligible
  WHERE o.work_id = eligible.work_id
  RETURNING o.work_id, o.claim_generation;
$fn$;

-- complete(work, worker, generation): lock the row first, then decide with a clock read taken
-- after the lock was granted. Returns how many rows changed: 1 for the owner, 0 for a stale claim.
CREATE FUNCTION pg_temp.complete(id text, worker text, generation bigint) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  changed integer;
BEGIN
  PERFORM 1 FROM outbox o WHERE o.work_id = id FOR UPDATE;
  UPDATE outbox o
  SET state = 'done', completed_at = clock_timestamp(), claimed_by = NULL, lease_until = NULL
  WHERE o.work_id = id
    AND o.state = 'running'
    AND o.claimed_by = worker
    AND o.claim_generation = generation -- guard: generation
    AND o.lease_until > clock_timestamp();
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END
$fn$;

CREATE TEMPORARY TABLE claims (worker text, work_id text, generation bigint);

-- A takes the work under a very short lease.
INSERT INTO claims SELECT 'worker-a', c.work_id, c.generation
FROM pg_temp.claim('worker-a', interval '300 milliseconds') c;
SELECT pg_temp.check_that(
  (SELECT generation FROM claims WHERE worker = 'worker-a') = 1
  AND (SELECT claim_generation FROM outbox WHERE work_id = 'order-103-ack') = 1,
  'a claim raises the generation (0 -> 1) and returns it');

-- B asks at once: the lease is not over, so the row is not eligible.
SELECT pg_temp.check_that(
  NOT EXISTS (SELECT 1 FROM pg_temp.claim('worker-b', interval '1 minute')),
  'a row under an unexpired lease is not claimed again');
SELECT pg_temp.check_that(
  (SELECT claimed_by FROM outbox WHERE work_id = 'order-103-ack') = 'worker-a',
  'the refused claim left worker-a as owner');

-- Let A's lease run out on the database clock (A is "paused", not known to be dead).
SELECT pg_sleep(0.4);
SELECT pg_temp.check_that(
  (SELECT clock_timestamp() > lease_until FROM outbox WHERE work_id = 'order-103-ack'),
  'worker-a''s lease has ended on the database clock');

INSERT INTO claims SELECT 'worker-b', c.work_id, c.generation
FROM pg_temp.claim('worker-b', interval '1 minute') c;
SELECT pg_temp.check_that(
  (SELECT generation FROM claims WHERE worker = 'worker-b') = 2,
  'after expiry, worker-b claims generation 2');

-- A wakes up and tries to finish under its old claim: it must change nothing. Even passing B's
-- worker name with A's generation must fail, so the generation alone has to refuse it.
SELECT pg_temp.check_that(
  pg_temp.complete('order-103-ack', 'worker-a', 1) = 0,
  'a completion by the older generation (worker-a, 1) changes zero rows');
SELECT pg_temp.check_that(
  pg_temp.complete('order-103-ack', 'worker-b', 1) = 0,
  'a completion naming generation 1 changes zero rows even under the current owner''s name');
SELECT pg_temp.check_that(
  (SELECT state = 'running' AND claimed_by = 'worker-b' AND claim_generation = 2
   FROM outbox WHERE work_id = 'order-103-ack'),
  'the stale attempts left worker-b''s claim untouched');

SELECT pg_temp.check_that(
  pg_temp.complete('order-103-ack', 'worker-b', 2) = 1,
  'the current generation (worker-b, 2) completes: one row');
SELECT pg_temp.check_that(
  pg_temp.complete('order-103-ack', 'worker-b', 2) = 0,
  'completing again changes zero rows: the current generation completes once');
SELECT pg_temp.check_that(
  (SELECT state = 'done' AND completed_at IS NOT NULL AND claimed_by IS NULL
   FROM outbox WHERE work_id = 'order-103-ack'),
  'the row is done, with no owner and no lease');

\echo '== all checks passed'
