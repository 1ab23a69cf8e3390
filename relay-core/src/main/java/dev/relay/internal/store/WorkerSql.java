package dev.relay.internal.store;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/** The worker registration's statements (rolling upgrades), schema injected once per schema. */
final class WorkerSql {
  private static final PerSchema<WorkerSql> CATALOG = new PerSchema<>(WorkerSql::new);

  final String exists;
  final String register;
  final String heartbeat;
  final String deregister;

  static WorkerSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private WorkerSql(SchemaName schema) {
    exists = schema.inject("SELECT to_regclass('${relay_schema}.worker') IS NOT NULL");
    register =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.worker AS w
                   (worker_id, relay_version, schema_version, host, started_at, heartbeat_at,
                    stale_after)
            VALUES (?, ?, ?, ?, clock_timestamp(), clock_timestamp(),
                    ? * interval '1 millisecond')
                ON CONFLICT (worker_id) DO UPDATE
               SET relay_version = EXCLUDED.relay_version,
                   schema_version = EXCLUDED.schema_version,
                   host = EXCLUDED.host,
                   started_at = EXCLUDED.started_at,
                   heartbeat_at = EXCLUDED.heartbeat_at,
                   stale_after = EXCLUDED.stale_after
            """);
    heartbeat =
        schema.inject(
            "UPDATE ${relay_schema}.worker SET heartbeat_at = clock_timestamp()"
                + " WHERE worker_id = ?");
    deregister = schema.inject("DELETE FROM ${relay_schema}.worker WHERE worker_id = ?");
  }
}
