-- Relay schema, version 12: the deduplication horizon is a rule of every claim.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Where the receiver's deduplication horizon (the kind's dedup_horizon) is measured from when it
-- is not the first attempt: the moment of a redrive that overrode the horizon, which starts a new
-- one. NULL otherwise, and then first_attempt_at is the start. Every claim compares it with the
-- database clock: work past its horizon is failed (horizon_passed) instead of run again. A new
-- nullable column without a default: no table rewrite, and workers of the previous release, which
-- never read it, keep working (they do not apply the horizon at claim time).
ALTER TABLE ${relay_schema}.outbox ADD COLUMN horizon_start timestamptz;
