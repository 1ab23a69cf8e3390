package dev.relay.internal.store;

import dev.relay.Outbox;
import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** Shared set-up for storage tests: enqueue, claim, read the clock and rows. */
final class StoreFixture {
  /** Generous limits: tests hold row locks on purpose, on a loaded machine. */
  static final Timeouts TIMEOUTS =
      new Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(120), Duration.ofSeconds(120));

  final DataSource ds;
  final String schema;
  final WorkStore store;
  final Outbox outbox;

  StoreFixture(DataSource ds, String schema) {
    this.ds = ds;
    this.schema = schema;
    this.store = new WorkStore(SchemaName.of(schema), TIMEOUTS);
    this.outbox = Outbox.builder().schema(schema).build();
  }

  void enqueue(Work... works) {
    enqueue(List.of(works));
  }

  void enqueue(List<Work> works) {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      for (int from = 0; from < works.size(); from += 1000) {
        outbox.enqueueAll(c, works.subList(from, Math.min(works.size(), from + 1000)));
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static List<Work> many(int n, String kind) {
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      works.add(Work.of(String.format("w-%05d", i), kind, "{\"n\":" + i + "}"));
    }
    return works;
  }

  ClaimBatch claim(String worker, int limit, Duration lease) {
    return claim(worker, limit, lease, null);
  }

  ClaimBatch claim(String worker, int limit, Duration lease, ClaimPosition resumeAfter) {
    try (Connection c = ds.getConnection()) {
      return store.claim(
          c, new ClaimRequest(worker, List.of("default"), List.of("k"), limit, lease, resumeAfter));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** One claim of kind {@code k} over the given queues (the several-queue statement when 2+). */
  ClaimBatch claim(String worker, List<String> queues, int limit) {
    return claim(worker, queues, limit, null);
  }

  /** As {@link #claim(String, List, int)}, resuming after a position when one is given. */
  ClaimBatch claim(String worker, List<String> queues, int limit, ClaimPosition resumeAfter) {
    try (Connection c = ds.getConnection()) {
      return store.claim(
          c,
          new ClaimRequest(
              worker, queues, List.of("k"), limit, Duration.ofMinutes(1), resumeAfter));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Whether the database clock has passed the row's stored lease. */
  boolean leaseExpired(String workId) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT clock_timestamp() > lease_until FROM "
                    + schema
                    + ".outbox WHERE work_id = ?")) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Ends the lease of a running row now on the database clock, as if its worker had died and the
   * lease had run out, without waiting for it.
   */
  void expireLease(String workId) {
    Rows.update(
        ds,
        schema,
        "UPDATE {schema}.outbox SET lease_until = clock_timestamp() - interval '1 millisecond'"
            + " WHERE work_id = ? AND state = 'running'",
        workId);
  }

  /** Whether the backend {@code pid} is waiting for a lock. */
  boolean waitingOnLock(int pid) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static int pid(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  Map<String, Object> row(String workId) {
    return Rows.work(ds, schema, workId);
  }

  long count(String sql, Object... params) {
    return Rows.count(ds, schema, sql, params);
  }

  <T> T with(ConnectionFunction<T> f) {
    try (Connection c = ds.getConnection()) {
      return f.apply(c);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @FunctionalInterface
  interface ConnectionFunction<T> {
    T apply(Connection c) throws SQLException;
  }
}
