package dev.relay.admin;

import dev.relay.ConnectionFactory;
import dev.relay.InvalidConfigurationException;
import dev.relay.RelayException;
import dev.relay.internal.admin.AdminStore;
import dev.relay.internal.admin.HistoryDays;
import dev.relay.internal.admin.RollupFold;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.Deployment;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Timeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the history table's day partitions ahead, runs retention ({@link Admin#purge} with the
 * configured {@link PurgePolicy}) and then refreshes the done/cancelled summary that {@link
 * Admin#health} reads ({@link Admin#refreshSummary()}) on an interval, in one process at a time per
 * schema: each run first takes a session advisory lock whose key includes the schema name, on a
 * <b>dedicated</b> connection that this service opens and keeps. A session lock must never live on
 * a pooled connection: returned to the pool, the lock would go on with it to whoever borrows it
 * next. Pass a factory that opens a connection of its own:
 *
 * <pre>{@code
 * Maintenance m = Maintenance.create(
 *     dataSource, () -> DriverManager.getConnection(url, user, password), MaintenanceConfig.DEFAULT);
 * m.start();   // ... m.close() on shutdown
 * }</pre>
 *
 * <p>Once an instance holds the lock it keeps it (and the connection) until {@link #stop()}, so the
 * work stays in one place; when that process stops or its connection drops, the lock is released
 * and the next run elsewhere takes it. The purge itself uses the data source, one short transaction
 * per batch. {@link #runOnce()} runs one round now, whether or not the service is started, so tests
 * and tools need no sleeping. Errors of a scheduled run are logged and the next run tries again.
 */
public final class Maintenance implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);

  private final DataSource dataSource;
  private final ConnectionFactory lockConnections;
  private final MaintenanceConfig config;
  private final SchemaName schema;
  private final AdminStore store;
  private final HistoryDays history;
  private final Object lock = new Object();
  private Connection lockConnection; // guarded by lock
  private boolean leader; // guarded by lock
  private ScheduledExecutorService scheduler; // guarded by lock

  private Maintenance(
      DataSource dataSource, ConnectionFactory lockConnections, MaintenanceConfig config) {
    this.dataSource = dataSource;
    this.lockConnections = lockConnections;
    this.config = config;
    this.schema = SchemaName.of(config.schema());
    this.store = new AdminStore(schema, Timeouts.DEFAULT);
    this.history = new HistoryDays(schema, Timeouts.DEFAULT);
  }

  /**
   * A maintenance service (not started).
   *
   * @param dataSource connections for the purge transactions
   * @param lockConnections opens the dedicated connection that holds the advisory lock (not a
   *     pooled one)
   * @param config the schema, interval and policy
   * @throws InvalidConfigurationException if a setting is out of range
   */
  public static Maintenance create(
      DataSource dataSource, ConnectionFactory lockConnections, MaintenanceConfig config) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(lockConnections, "lockConnections");
    if (config == null) {
      throw new InvalidConfigurationException("config", "is null");
    }
    SchemaName.of(config.schema());
    Duration i = config.interval();
    if (i == null
        || i.compareTo(Duration.ofSeconds(1)) < 0
        || i.compareTo(Duration.ofHours(24)) > 0) {
      throw new InvalidConfigurationException("interval", "must be between 1 s and 24 h, was " + i);
    }
    try {
      Admin.requirePolicy(config.policy());
    } catch (InvalidAdminRequestException e) {
      throw new InvalidConfigurationException("policy." + e.field(), e.getMessage());
    }
    return new Maintenance(dataSource, lockConnections, config);
  }

  /** The configuration. */
  public MaintenanceConfig config() {
    return config;
  }

  /** Starts running {@link #runOnce()} every interval (the first run at once). Idempotent. */
  public void start() {
    synchronized (lock) {
      if (scheduler != null) {
        return;
      }
      scheduler =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "relay-maintenance-" + schema.sql());
                t.setDaemon(true);
                return t;
              });
      scheduler.scheduleWithFixedDelay(
          this::runQuietly, 0, config.interval().toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Stops the schedule, waits up to 30 s for a run in progress, then releases the lock and closes
   * the dedicated connection. Idempotent; {@link #runOnce()} still works afterwards.
   */
  public void stop() {
    ScheduledExecutorService s;
    synchronized (lock) {
      s = scheduler;
      scheduler = null;
    }
    if (s != null) {
      s.shutdown();
      try {
        s.awaitTermination(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (lock) {
      releaseLock();
    }
  }

  /** Same as {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }

  /**
   * Whether this instance holds the schema's maintenance lock (as of its last run).
   *
   * @return whether it is the leader
   */
  public boolean isLeader() {
    synchronized (lock) {
      return leader;
    }
  }

  /**
   * One round now: take (or confirm) the lock; if held here, fold newly finished work into the
   * charts' rollup ({@link Admin#charts}; at most 100,000 rows a run, in transactions of 5,000 that
   * each move the rollup's watermark with their counts), create the history table's partitions of
   * today and the next two UTC days where missing, and of any day whose rows wait in its default
   * partition (moving them in; a lock timeout leaves the rest to the next round), purge under the
   * policy, remove pauses whose automatic resume has passed (audited, waking the workers), then
   * refresh the done/cancelled summary.
   *
   * @throws RelayException if the database fails (the lock is dropped and retaken next time)
   */
  public MaintenanceResult runOnce() {
    synchronized (lock) {
      if (!holdLock()) {
        return new MaintenanceResult(false, null, null, 0);
      }
      try (Connection c = dataSource.getConnection()) {
        // The charts' rollup first, so that work the purge removes below was counted already
        // (unless the fold is behind by more than a run's bound, after an upgrade's backfill).
        RollupFold.Folded folded = store.foldRollup(c, RollupFold.DEFAULT_MAX_BATCHES);
        // Before the purge: a day whose rows waited in the default partition gets its partition
        // here, and the purge then retires it with the other days past retention.
        int days = history.addDays(c);
        if (days > 0) {
          log.info("relay maintenance on {}: {} history day partition(s) created", schema, days);
        }
        PurgeResult p = store.purge(c, config.policy(), false);
        // Expired pauses already hold nothing (every claim compares resume_at with the database
        // clock); removing them keeps the table small, records the resume and wakes the workers.
        int resumed = store.expirePauses(c);
        if (resumed > 0) {
          log.info(
              "relay maintenance on {}: {} paused target(s) resumed automatically",
              schema,
              resumed);
        }
        // After the purge, so the counts leave out what it just removed.
        Instant asOf = store.refreshSummary(c);
        return new MaintenanceResult(true, p, asOf, folded.rows());
      } catch (SQLException e) {
        throw SqlErrors.translate("maintenance purge", e);
      }
    }
  }

  private void runQuietly() {
    try {
      MaintenanceResult r = runOnce();
      if (r.leader()
          && r.purge() != null
          && (r.purge().work() > 0 || r.purge().historyDays() > 0)) {
        log.info("relay maintenance on {}: {}", schema, r.purge());
      }
      lastFailure = null;
    } catch (RuntimeException e) {
      String failure = e.toString();
      if (failure.equals(lastFailure) || e instanceof InvalidConfigurationException) {
        // The same failure as the last run's (a configuration that stays wrong, a pooler in front
        // of the database): one line each interval, not the same stack trace again.
        log.warn("relay maintenance on {} failed; retrying next interval: {}", schema, failure);
      } else {
        log.warn("relay maintenance on {} failed; retrying next interval", schema, e);
      }
      lastFailure = failure;
    }
  }

  /** The failure of the last scheduled run, or {@code null} after a run that succeeded. */
  private String lastFailure;

  /** Whether this instance holds the lock after this call. Caller holds {@link #lock}. */
  private boolean holdLock() {
    try {
      if (lockConnection != null && leader && lockConnection.isValid(5)) {
        return true;
      }
      if (lockConnection != null && !lockConnection.isValid(5)) {
        closeQuietly();
      }
      if (lockConnection == null) {
        lockConnection = lockConnections.open();
        lockConnection.setAutoCommit(true);
        if (!Deployment.direct(lockConnection)) {
          closeQuietly();
          throw new InvalidConfigurationException(
              "lockConnections",
              "opens its connections through a connection pooler (the server process that answers"
                  + " is not the one the connection announced): a session advisory lock there"
                  + " would stay on a server session that other clients borrow, so two processes"
                  + " could both lead maintenance. Give Maintenance a direct connection to"
                  + " PostgreSQL (relay.direct-connection.url in the starter and relay serve)");
        }
      }
      try (PreparedStatement ps =
          lockConnection.prepareStatement(Coordination.TRY_LOCK_MAINTENANCE)) {
        ps.setString(1, Coordination.maintenanceKey(schema));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          leader = rs.getBoolean(1);
        }
      }
      if (!leader) {
        // Not ours: give the connection back rather than hold one open per waiting instance.
        closeQuietly();
      }
      return leader;
    } catch (SQLException e) {
      closeQuietly();
      throw SqlErrors.translate("maintenance lock", e);
    }
  }

  private void releaseLock() {
    if (lockConnection == null) {
      return;
    }
    if (leader) {
      try (PreparedStatement ps =
          lockConnection.prepareStatement(Coordination.UNLOCK_MAINTENANCE)) {
        ps.setString(1, Coordination.maintenanceKey(schema));
        ps.executeQuery().close();
      } catch (SQLException e) {
        log.debug("unlock on close failed; closing the connection releases it", e);
      }
    }
    closeQuietly();
  }

  private void closeQuietly() {
    leader = false;
    if (lockConnection != null) {
      try {
        lockConnection.close();
      } catch (SQLException ignored) {
        // Closing ends the session, which releases any session lock.
      }
      lockConnection = null;
    }
  }
}
