package dev.relay.spring.autoconfigure;

import dev.relay.Migrator;
import dev.relay.admin.Admin;
import dev.relay.admin.QueueHealth;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
  private static final String OUTBOX_EXISTS = "SELECT to_regclass(?) IS NOT NULL";

  private final DataSource dataSource;
  private final String schema;
  private final Admin admin;
  private final RelayRuntime runtime; // null when the application runs its own Relay
  private final Duration detailsMaxAge;
  private final Clock clock = Clock.systemUTC();
  private final Object lock = new Object();
  private Map<String, Object> details = Map.of(); // guarded by lock
  private Instant readAt = Instant.MIN; // guarded by lock

  RelayHealthIndicator(
      DataSource dataSource, String schema, RelayRuntime runtime, Duration detailsMaxAge) {
    super("Relay health check failed");
    this.dataSource = dataSource;
    this.schema = schema;
    this.admin = Admin.create(dataSource, schema);
    this.runtime = runtime;
    this.detailsMaxAge = detailsMaxAge;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) throws Exception {
    int version;
    boolean tables;
    try (Connection c = dataSource.getConnection()) {
      // The version is 0 when Flyway or Liquibase ran the scripts: the outbox table decides.
      version = Migrator.forSchema(schema).currentVersion(c);
      try (PreparedStatement ps = c.prepareStatement(OUTBOX_EXISTS)) {
        ps.setString(1, schema + ".outbox");
        try (ResultSet rs = ps.executeQuery()) {
          tables = rs.next() && rs.getBoolean(1);
        }
      }
    }
    builder
        .withDetail("schema", schema)
        .withDetail("schemaVersion", version)
        .withDetail(
            "runtime",
            runtime == null ? "not managed" : runtime.isRunning() ? "running" : "stopped");
    if (!tables) {
      builder.down().withDetail("problem", "no outbox table in schema " + schema);
      return;
    }
    builder.up().withDetails(kinds());
  }

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
