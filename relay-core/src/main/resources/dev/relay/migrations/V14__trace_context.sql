-- Relay schema, version 14: the producer's trace context, stored with the work.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- The W3C trace context current when the work was enqueued (a JSON object of carrier fields:
-- traceparent, tracestate, baggage), written by the enqueue statement itself when the producer's
-- outbox has a RelayTracing configured, read back by the claim so that each attempt's span can link
-- to (or continue) the producer's trace. NULL when no trace was current. Never part of the payload
-- and never compared: a repeat of the same intention under another trace keeps the first. A new
-- nullable column without a default: no table rewrite, and workers and producers of the previous
-- release, which never name it, keep working.
ALTER TABLE ${relay_schema}.outbox ADD COLUMN trace_context jsonb;
