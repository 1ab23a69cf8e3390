-- Relay schema, version 6: abandoned outcomes in the attempt history.
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
