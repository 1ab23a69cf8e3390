/**
 * Relay: a transactional outbox and durable job queue on PostgreSQL.
 *
 * <p>Exports only the public API: {@code dev.relay} (producer, worker, migrator), {@code
 * dev.relay.admin} (operator actions and maintenance), {@code dev.relay.receiver} (inbox, fences,
 * idempotent requests) and {@code dev.relay.receiver.http}. The engine, the SQL and the JSON reader
 * live in {@code dev.relay.internal.*}, which is not exported and may change in any release. The
 * public signatures are recorded in {@code relay-core/api/relay-core.api} and checked by a test.
 */
module dev.relay {
  // DataSource and Connection appear in the public API, so readers of dev.relay read java.sql.
  requires transitive java.sql;
  requires org.slf4j;
  // pgjdbc is an automatic module (Automatic-Module-Name org.postgresql.jdbc); the worker uses its
  // PGConnection for LISTEN/NOTIFY. No pgjdbc type appears in the public API.
  requires org.postgresql.jdbc;

  exports dev.relay;
  exports dev.relay.admin;
  exports dev.relay.receiver;
  exports dev.relay.receiver.http;
}
