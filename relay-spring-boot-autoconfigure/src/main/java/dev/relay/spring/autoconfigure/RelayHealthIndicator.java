package dev.relay.spring.autoconfigure;

import dev.relay.Migrator;
import dev.relay.RelayException;
import dev.relay.admin.Admin;
import dev.relay.admin.QueueHealth;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Relay's health: UP when a connection of the runtime's pool answers and Relay's outbox table
 * exists; DOWN when the database cannot be reached or the table is missing.
 *
 * <p>Details: the schema and its version, whether the runtime is running, and per kind the age of
 * the longest-waiting eligible item, expired leases and failed work. The per-kind details come from
 * {@link Admin#health}, which reads unfinished and failed work, so they are read at most once per
 * {@code relay.health-details-max-age} (default 30 s) and shown from that reading in between: a
 * health probe every second costs one {@code SELECT} of the schema version each time, nothing more.
 *
 * <p>A probe waits at most {@code relay.health-timeout} (default 1 s) for the database: when a
 * connection cannot be had or the query does not answer in that time it is DOWN at once, instead of
 * after the pool's 10 s connection timeout. The check itself goes on in one background thread, and
 * later probes wait for it rather than start another, so an unreachable database never piles up
 * waiting checks or connections.
 */
final class RelayHealthIndicator extends AbstractHealthIndicator implements AutoCloseable {
  private static final String OUTBOX_EXISTS = "SELECT to_regclass(?) IS NOT NULL";

  private final DataSource dataSource;
  private final String schema;
  private final Admin admin;
  private final RelayRuntime runtime; // null when the application runs its own Relay
  private final Duration detailsMaxAge;
  private final Clock clock = Clock.systemUTC();
  private final Duration timeout;
  private final ExecutorService checks =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "relay-health");
            t.setDaemon(true);
            return t;
          });
  private final Object lock = new Object();
  private final Object checkLock = new Object();
  private Future<Reading> inFlight; // guarded by checkLock
  private Map<String, Object> details = Map.of(); // guarded by lock
  private Instant readAt = Instant.MIN; // guarded by lock

  RelayHealthIndicator(
      DataSource dataSource,
      String schema,
      RelayRuntime runtime,
      Duration detailsMaxAge,
      Duration timeout) {
    super("Relay health check failed");
    this.dataSource = dataSource;
    this.schema = schema;
    this.admin = Admin.create(dataSource, schema);
    this.runtime = runtime;
    this.detailsMaxAge = detailsMaxAge;
    this.timeout = timeout;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) throws Exception {
    builder
        .withDetail("schema", schema)
        .withDetail(
            "runtime",
            runtime == null ? "not managed" : runtime.isRunning() ? "running" : "stopped");
    Future<Reading> check = check();
    Reading reading;
    try {
      reading = check.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      // The check goes on in the background; the next probe waits for that one, not a new one.
      builder.down().withDetail("problem", "no answer from the database within " + timeout);
      return;
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
    builder.withDetail("schemaVersion", reading.version());
    if (!reading.tables()) {
      builder.down().withDetail("problem", "no outbox table in schema " + schema);
      return;
    }
    Map<String, Object> kinds;
    try {
      kinds = kinds();
    } catch (RelayException e) {
      if (!PERMISSION_DENIED.equals(e.sqlState())) {
        throw e;
      }
      // The database answers and the tables are there: this user may run work, not read the
      // queue details (a worker-only user). That is no reason to call the application DOWN.
      builder
          .up()
          .withDetail(
              "kinds",
              "not readable by this database user (permission denied): the queue details read"
                  + " queue health as an operator does; give the user "
                  + schema
                  + "_operator, or leave them out with management.health.relay.enabled=false");
      return;
    }
    builder.up().withDetails(kinds);
  }

  /** PostgreSQL's insufficient_privilege. */
  private static final String PERMISSION_DENIED = "42501";

  /** The check in flight, or a new one when none is. */
  private Future<Reading> check() {
    synchronized (checkLock) {
      if (inFlight == null || inFlight.isDone()) {
        inFlight = checks.submit(this::read);
      }
      return inFlight;
    }
  }

  private Reading read() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      // The version is 0 when Flyway or Liquibase ran the scripts: the outbox table decides.
      int version = Migrator.forSchema(schema).currentVersion(c);
      try (PreparedStatement ps = c.prepareStatement(OUTBOX_EXISTS)) {
        ps.setString(1, schema + ".outbox");
        try (ResultSet rs = ps.executeQuery()) {
          return new Reading(version, rs.next() && rs.getBoolean(1));
        }
      }
    }
  }

  /** Stops the checking thread. */
  @Override
  public void close() {
    checks.shutdownNow();
  }

  private record Reading(int version, boolean tables) {}

  private Map<String, Object> kinds() {
    synchronized (lock) {
      Instant now = clock.instant();
      if (readAt.plus(detailsMaxAge).isAfter(now)) {
        return details;
      }
      List<QueueHealth> rows = admin.health(Duration.ofMinutes(15));
      Map<String, Object> byKind = new LinkedHashMap<>();
      for (QueueHealth q : rows) {
        Map<String, Object> one = new LinkedHashMap<>();
        one.put(
            "oldestEligibleAge",
            q.oldestEligibleAge() == null ? null : q.oldestEligibleAge().toString());
        one.put("expiredLeases", q.expiredLeases());
        one.put("failed", q.failed());
        byKind.put(q.queue() + "/" + q.kind(), one);
      }
      details = Map.of("kinds", byKind, "detailsReadAt", now.toString());
      readAt = now;
      return details;
    }
  }
}
