-- Relay schema, version 15: snooze (try again later without spending an attempt).
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Expand only: a new column with a constant default (no table rewrite since PostgreSQL 11), a new
-- nullable kind setting, and a wider check on the attempt history's ending. Workers of the
-- previous release never name any of them and keep working; they never snooze.

-- How many times this item was snoozed (the handler said: the effect did not happen, try again
-- later). A snooze gives its attempt back; this counter, capped by the kind's max_snoozes, is what
-- keeps a receiver that always says "later" from looping forever. A redrive resets it.
ALTER TABLE ${relay_schema}.outbox ADD COLUMN snoozes integer NOT NULL DEFAULT 0;

-- The kind's snooze cap as its workers registered it; NULL (a kind registered by an older worker)
-- means the library default. At the cap a snooze counts as an ordinary retry (error kind
-- snooze_limit): it spends an attempt, so the attempt cap and the retry window end the loop.
ALTER TABLE ${relay_schema}.kind ADD COLUMN max_snoozes integer CHECK (max_snoozes >= 0);

-- A snoozed claim is recorded in the attempt history with ending 'snoozed'.
-- NOT VALID then VALIDATE, as in V6: the scan does not block writers.
ALTER TABLE ${relay_schema}.attempt DROP CONSTRAINT attempt_ending_check;
ALTER TABLE ${relay_schema}.attempt ADD CONSTRAINT attempt_ending_check CHECK (ending IN
    ('retry', 'failed', 'lease_expired', 'stale_write', 'cancelled', 'released', 'abandoned',
     'snoozed'))
    NOT VALID;
ALTER TABLE ${relay_schema}.attempt VALIDATE CONSTRAINT attempt_ending_check;
