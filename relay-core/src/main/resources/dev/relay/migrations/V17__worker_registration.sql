-- Relay schema, version 17: which Relay runtimes are live, for rolling upgrades.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Expand only: a new table. Every migration from now on is expand-then-contract: a release adds
-- (new nullable columns, tables, functions, indexes) and keeps working with what the previous
-- release's workers write; the contract step that removes or tightens something comes one release
-- later, in a file whose name holds "__contract_", and the migrator refuses it while a worker of
-- an older release is registered here.

-- One row per running Relay runtime, written at start, renewed at every heartbeat, deleted on a
-- clean shutdown. A row whose heartbeat is older than stale_after is a worker that died without
-- shutting down: it counts as gone.
CREATE TABLE ${relay_schema}.worker (
    worker_id      text        PRIMARY KEY,
    relay_version  text        NOT NULL,   -- the library's version (jar manifest)
    schema_version integer     NOT NULL,   -- the newest schema version the library knows
    host           text,
    started_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    stale_after    interval    NOT NULL
);
