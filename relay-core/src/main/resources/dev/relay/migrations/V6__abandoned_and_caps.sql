-- Relay schema, version 6: abandoned outcomes in the attempt history, attempt caps from the kind,
-- a retry window that a redrive restarts.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- A worker that could not reach PostgreSQL before its lease passed gives its outcome up; on
-- reconnection it records what it gave up (ending 'abandoned'), so the history shows it.
-- NOT VALID then VALIDATE: adding a check scans the table, and VALIDATE does so without blocking
-- writers (SHARE UPDATE EXCLUSIVE instead of ACCESS EXCLUSIVE for the scan).
ALTER TABLE ${relay_schema}.attempt DROP CONSTRAINT attempt_ending_check;
ALTER TABLE ${relay_schema}.attempt ADD CONSTRAINT attempt_ending_check CHECK (ending IN
    ('retry', 'failed', 'lease_expired', 'stale_write', 'cancelled', 'released', 'abandoned'))
    NOT VALID;
ALTER TABLE ${relay_schema}.attempt VALIDATE CONSTRAINT attempt_ending_check;

-- What an abandoned row gave up: the settlement (complete, retry, fail, cancelled, release) and
-- the receiver's reference for the effect. NULL on every other ending.
ALTER TABLE ${relay_schema}.attempt ADD COLUMN action text;
ALTER TABLE ${relay_schema}.attempt ADD COLUMN receiver_ref text;

-- One abandoned row per claim: recording it again (a retry after a lost COMMIT) adds nothing.
CREATE UNIQUE INDEX attempt_abandoned_once_idx ON ${relay_schema}.attempt (work_id, generation)
    WHERE ending = 'abandoned';

-- The attempt cap is stored only when the producer names one; otherwise NULL, and the claim and
-- settle statements apply coalesce(least(outbox.max_attempts, kind.max_attempts), 25), so a
-- kind's registered cap (lower or higher than 25) takes effect at claim time. Existing rows keep
-- the value they were given (25 when their producer named none): rewriting them could not tell a
-- named 25 from the old default, so they keep their behaviour until they finish.
ALTER TABLE ${relay_schema}.outbox ALTER COLUMN max_attempts DROP DEFAULT;
ALTER TABLE ${relay_schema}.outbox ALTER COLUMN max_attempts DROP NOT NULL;

-- Where the retry window (a kind's max_elapsed) starts: the first claim, and again the first claim
-- after a redrive, which clears it, so a redrive gives a fresh window as well as fresh attempts.
-- first_attempt_at keeps the first claim ever: the receiver's deduplication horizon is measured
-- from it. Existing rows stay NULL; their next claim takes first_attempt_at (none needs a rewrite).
ALTER TABLE ${relay_schema}.outbox ADD COLUMN retry_window_start timestamptz;
