package dev.relay.internal.store;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;

/**
 * The {@code worker} table (version 17): which Relay runtimes are live and which schema version
 * each one's library knows, so the migrator can refuse a contract step while an older one runs.
 * Each runtime registers its own row at start, renews its heartbeat, and deletes the row on a clean
 * shutdown; a row whose heartbeat is older than its {@code stale_after} counts as gone.
 */
public final class WorkerRegistry {
  private final WorkerSql sql;
  private final Timeouts timeouts;

  /** The registry of {@code schema}, its transactions bounded by {@code timeouts}. */
  public WorkerRegistry(SchemaName schema, Timeouts timeouts) {
    this.sql = WorkerSql.of(schema);
    this.timeouts = timeouts;
  }

  /** What a runtime registers about itself. */
  public record Registration(
      String workerId, String relayVersion, int schemaVersion, String host, Duration staleAfter) {}

  /** Whether the registration table exists (a schema built by Flyway may predate it). */
  public boolean available(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "find the worker table",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.exists);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
          }
        });
  }

  /** Inserts this runtime's row, or takes over one left by an earlier run under the same ID. */
  public void register(Connection c, Registration r) {
    Tx.run(
        c,
        timeouts,
        "register worker",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.register)) {
            ps.setString(1, r.workerId());
            ps.setString(2, r.relayVersion());
            ps.setInt(3, r.schemaVersion());
            ps.setString(4, r.host());
            ps.setLong(5, r.staleAfter().toMillis());
            return ps.executeUpdate();
          }
        });
  }

  /**
   * Renews the heartbeat; when the row is gone (deleted by an operator, or the table was emptied)
   * registers again, so the row reflects every live runtime.
   */
  public void heartbeat(Connection c, Registration r) {
    int updated =
        Tx.run(
            c,
            timeouts,
            "worker heartbeat",
            tx -> {
              try (PreparedStatement ps = tx.prepareStatement(sql.heartbeat)) {
                ps.setString(1, r.workerId());
                return ps.executeUpdate();
              }
            });
    if (updated == 0) {
      register(c, r);
    }
  }

  /** Deletes this runtime's row: a clean shutdown. */
  public void deregister(Connection c, String workerId) {
    Tx.run(
        c,
        timeouts,
        "deregister worker",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.deregister)) {
            ps.setString(1, workerId);
            return ps.executeUpdate();
          }
        });
  }
}
