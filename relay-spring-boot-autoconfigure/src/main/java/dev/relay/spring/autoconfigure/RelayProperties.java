package dev.relay.spring.autoconfigure;

import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.PurgePolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code relay.*} properties: every setting of {@code Relay.Builder}, the outbox's payload
 * limit, the runtime's own pool, the health check, the maintenance loop under {@code
 * relay.maintenance.*}, and a policy per kind under {@code relay.kinds.<kind>.*}. Values are
 * checked as soon as they are bound; a value out of range fails start-up naming the property and
 * its range. Unset settings take Relay's defaults.
 */
@ConfigurationProperties("relay")
public class RelayProperties {
  /** Whether to configure Relay at all. */
  private boolean enabled = true;

  /**
   * Whether to create or upgrade Relay's tables at start-up. Set false to leave it to Flyway or
   * Liquibase (the scripts are in relay-core's jar under dev/relay/migrations).
   */
  private boolean migrate = true;

  /** The schema holding Relay's tables. */
  private String schema = Relay.DEFAULT_SCHEMA;

  /**
   * The name of the DataSource bean holding Relay's tables, when the context has several and none
   * is primary.
   */
  private String dataSourceBean;

  /**
   * Connections in the runtime's own pool (claims, renewals, completions, health), opened with the
   * application DataSource's URL and credentials; the LISTEN connection comes on top (1-100).
   */
  private int poolSize = 4;

  /** This worker's ID (1-200 characters; default: host, process ID and a random suffix). */
  private String workerId;

  /** The queues to claim from (1-100 distinct names). */
  private List<String> queues = new ArrayList<>(Relay.DEFAULT_QUEUES);

  /** The most rows one claim transaction takes (1-1000). */
  private int batchSize = Relay.DEFAULT_BATCH_SIZE;

  /** The most handlers running at once (1-10000). */
  private int concurrency = Relay.DEFAULT_CONCURRENCY;

  /** The most claimed, unstarted items held locally (0-10000). */
  private int bufferSize = Relay.DEFAULT_BUFFER_SIZE;

  /** How long a claim lasts without renewal, on the database clock (100ms-24h). */
  private Duration lease = Relay.DEFAULT_LEASE;

  /** How often held claims are renewed (10ms up to the lease; default a third of it). */
  private Duration renewInterval;

  /**
   * Claimed work with less lease left than this when a slot frees is released, not started (zero up
   * to the lease; default a quarter of it).
   */
  private Duration startMargin;

  /** The longest wait between claim polls (10ms-1h). */
  private Duration pollInterval = Relay.DEFAULT_POLL_INTERVAL;

  /** The fraction by which each poll wait is randomly shortened (0.0-1.0). */
  private double pollJitter = Relay.DEFAULT_POLL_JITTER;

  /** Whether workers wake on LISTEN/NOTIFY and enqueue notifies. */
  private boolean notifications = true;

  /**
   * Whether this application's worker takes the work the application itself enqueues by local
   * hand-off: inserted already claimed and started right after the transaction commits.
   */
  private boolean localHandoff;

  /**
   * How long stopping waits for running handlers (0-1h). Default: 30s, or less so that stopping
   * fits in spring.lifecycle.timeout-per-shutdown-phase with 2s to spare.
   */
  private Duration shutdownGrace;

  /** The most outcomes recorded in one transaction (1-10000). */
  private int completionBatchSize = Relay.DEFAULT_COMPLETION_BATCH_SIZE;

  /** The longest an outcome waits for its batch to fill (0-10s). */
  private Duration completionMaxDelay = Relay.DEFAULT_COMPLETION_MAX_DELAY;

  /** The statement_timeout of Relay's own transactions (1ms-24h). */
  private Duration statementTimeout = Relay.DEFAULT_STATEMENT_TIMEOUT;

  /** The lock_timeout of Relay's own transactions (1ms-24h). */
  private Duration lockTimeout = Relay.DEFAULT_LOCK_TIMEOUT;

  /** The idle_in_transaction_session_timeout of Relay's own transactions (1ms-24h). */
  private Duration idleInTransactionTimeout = Relay.DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT;

  /** The largest payload the outbox accepts, in bytes of UTF-8 (1-67108864). */
  private int maxPayloadBytes = Outbox.DEFAULT_MAX_PAYLOAD_BYTES;

  /**
   * How old the queue details in the health contributor may be before they are read again (0s-1h).
   */
  private Duration healthDetailsMaxAge = Duration.ofSeconds(30);

  /**
   * How long a health probe waits for the database before it answers DOWN (100ms-1m); the runtime's
   * pool would otherwise keep it waiting its 10s connection timeout.
   */
  private Duration healthTimeout = Duration.ofSeconds(1);

  /** How often the queue gauges (relay.work.*) are read from the database (1s-1h). */
  private Duration metricsRefreshInterval = Duration.ofSeconds(15);

  /**
   * Whether relay-micrometer's meters are bound to the application's registry (when both are on the
   * class path). The queue gauges read queue health as an operator does, so a worker-only database
   * user switches them off here.
   */
  private boolean metricsEnabled = true;

  /**
   * The policy per kind, by kind name; a name with {@code :} or {@code .} is written in brackets,
   * {@code relay.kinds.[mail:v2].max-attempts} ({@link RelayKindNames}).
   */
  private Map<String, Kind> kinds = new LinkedHashMap<>();

  /** The maintenance loop: retention purge and the done/cancelled counts. */
  private final Maintenance maintenance = new Maintenance();

  /** A direct connection to PostgreSQL for what needs a session: LISTEN and maintenance's lock. */
  private final DirectConnection directConnection = new DirectConnection();

  /**
   * {@code relay.direct-connection.*}: where Relay opens the connections that must be sessions of
   * their own, the LISTEN connection and the maintenance loop's advisory lock, when the
   * application's DataSource goes through a transaction-pooling PgBouncer. Everything else
   * (enqueue, claims, renewals, completions, health, metrics, migrations) goes through the
   * DataSource's URL. Unset: the DataSource's URL serves both.
   */
  public static class DirectConnection {
    /**
     * JDBC URL of PostgreSQL itself, not of a pooler, for the LISTEN connection and the maintenance
     * lock (unset: the application DataSource's URL).
     */
    private String url;

    /** The user for the direct connection (unset: the DataSource's). */
    private String username;

    /** The password for the direct connection (unset: the DataSource's). */
    private String password;

    public String getUrl() {
      return url;
    }

    public void setUrl(String url) {
      this.url = url;
    }

    public String getUsername() {
      return username;
    }

    public void setUsername(String username) {
      this.username = username;
    }

    public String getPassword() {
      return password;
    }

    public void setPassword(String password) {
      this.password = password;
    }
  }

  /**
   * The maintenance loop, {@code relay.maintenance.*}: one process per schema at a time (an
   * advisory lock) purges done and cancelled work past its retention, leaving tombstones, and
   * recounts the done and cancelled work that health and the gauges show.
   */
  public static class Maintenance {
    /** Whether this process takes part in maintenance (one process per schema runs it). */
    private boolean enabled = true;

    /** The pause between two runs (1s-24h). */
    private Duration interval = MaintenanceConfig.DEFAULT_INTERVAL;

    /**
     * How long done and cancelled work stays after it ended, and at least its kind's dedup horizon
     * (1m-36500d).
     */
    private Duration workRetention = PurgePolicy.DEFAULT_WORK_RETENTION;

    /** How long attempt history and audit rows of ended work stay (1m-36500d). */
    private Duration historyRetention = PurgePolicy.DEFAULT_HISTORY_RETENTION;

    /** How long a purged item's tombstone (its identity) stays (1m-36500d). */
    private Duration identityHorizon = PurgePolicy.DEFAULT_IDENTITY_HORIZON;

    /** Rows per purge batch, each its own short transaction (1-10000). */
    private int batchSize = PurgePolicy.DEFAULT_BATCH_SIZE;

    /** Batches per table and run; the rest waits for the next run (1-100000). */
    private int maxBatches = PurgePolicy.DEFAULT_MAX_BATCHES;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }

    public Duration getWorkRetention() {
      return workRetention;
    }

    public void setWorkRetention(Duration workRetention) {
      this.workRetention = workRetention;
    }

    public Duration getHistoryRetention() {
      return historyRetention;
    }

    public void setHistoryRetention(Duration historyRetention) {
      this.historyRetention = historyRetention;
    }

    public Duration getIdentityHorizon() {
      return identityHorizon;
    }

    public void setIdentityHorizon(Duration identityHorizon) {
      this.identityHorizon = identityHorizon;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
      this.batchSize = batchSize;
    }

    public int getMaxBatches() {
      return maxBatches;
    }

    public void setMaxBatches(int maxBatches) {
      this.maxBatches = maxBatches;
    }
  }

  /** What an attempt whose effect is unknown gets. */
  public enum UnknownOutcome {
    /** Retry under the backoff, within max-elapsed (which must not exceed dedup-horizon). */
    RETRY,
    /** Park it as failed for an operator to decide. */
    PARK
  }

  /** The policy of one kind; unset values take {@link KindPolicy#DEFAULT}'s. */
  public static class Kind {
    /** The first retry's backoff ceiling; it doubles per attempt (1ms-365d). */
    private Duration backoffBase = KindPolicy.DEFAULT_BACKOFF_BASE;

    /** The largest backoff ceiling (backoff-base up to 365d). */
    private Duration backoffCap = KindPolicy.DEFAULT_BACKOFF_CAP;

    /** Attempts allowed (1-10000). */
    private int maxAttempts = KindPolicy.DEFAULT_MAX_ATTEMPTS;

    /** The retry window from the first attempt (1ms-3650d). */
    private Duration maxElapsed = KindPolicy.DEFAULT_MAX_ELAPSED;

    /** How long one attempt may run (1ms-30d). */
    private Duration maxRunTime = KindPolicy.DEFAULT_MAX_RUN_TIME;

    /** How long the receiver remembers a work ID (0-3650d; 0: it does not deduplicate). */
    private Duration dedupHorizon = KindPolicy.DEFAULT_DEDUP_HORIZON;

    /** What an attempt whose effect is unknown gets. */
    private UnknownOutcome unknownOutcome = UnknownOutcome.RETRY;

    /**
     * At most this many live claims of the kind across every worker (1-1000000; unset: no limit).
     * Enforced in the database; see docs/limits.md.
     */
    private Integer maxRunning;

    /**
     * At most this many live claims of the kind per group key across every worker (1-1000000;
     * unset: no limit).
     */
    private Integer maxRunningPerGroup;

    /**
     * At most this many claims of the kind within any rate-interval across every worker (1-1000000;
     * unset: no rate limit). Needs rate-interval.
     */
    private Integer rateLimit;

    /** The sliding window of rate-limit (1s-1d); set exactly when rate-limit is. */
    private Duration rateInterval;

    public Duration getBackoffBase() {
      return backoffBase;
    }

    public void setBackoffBase(Duration backoffBase) {
      this.backoffBase = backoffBase;
    }

    public Duration getBackoffCap() {
      return backoffCap;
    }

    public void setBackoffCap(Duration backoffCap) {
      this.backoffCap = backoffCap;
    }

    public int getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    public Duration getMaxElapsed() {
      return maxElapsed;
    }

    public void setMaxElapsed(Duration maxElapsed) {
      this.maxElapsed = maxElapsed;
    }

    public Duration getMaxRunTime() {
      return maxRunTime;
    }

    public void setMaxRunTime(Duration maxRunTime) {
      this.maxRunTime = maxRunTime;
    }

    public Duration getDedupHorizon() {
      return dedupHorizon;
    }

    public void setDedupHorizon(Duration dedupHorizon) {
      this.dedupHorizon = dedupHorizon;
    }

    public UnknownOutcome getUnknownOutcome() {
      return unknownOutcome;
    }

    public void setUnknownOutcome(UnknownOutcome unknownOutcome) {
      this.unknownOutcome = unknownOutcome;
    }

    public Integer getMaxRunning() {
      return maxRunning;
    }

    public void setMaxRunning(Integer maxRunning) {
      this.maxRunning = maxRunning;
    }

    public Integer getMaxRunningPerGroup() {
      return maxRunningPerGroup;
    }

    public void setMaxRunningPerGroup(Integer maxRunningPerGroup) {
      this.maxRunningPerGroup = maxRunningPerGroup;
    }

    public Integer getRateLimit() {
      return rateLimit;
    }

    public void setRateLimit(Integer rateLimit) {
      this.rateLimit = rateLimit;
    }

    public Duration getRateInterval() {
      return rateInterval;
    }

    public void setRateInterval(Duration rateInterval) {
      this.rateInterval = rateInterval;
    }
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public boolean isMigrate() {
    return migrate;
  }

  public void setMigrate(boolean migrate) {
    this.migrate = migrate;
  }

  public String getSchema() {
    return schema;
  }

  public void setSchema(String schema) {
    this.schema = schema;
  }

  public String getDataSourceBean() {
    return dataSourceBean;
  }

  public void setDataSourceBean(String dataSourceBean) {
    this.dataSourceBean = dataSourceBean;
  }

  public int getPoolSize() {
    return poolSize;
  }

  public void setPoolSize(int poolSize) {
    this.poolSize = poolSize;
  }

  public String getWorkerId() {
    return workerId;
  }

  public void setWorkerId(String workerId) {
    this.workerId = workerId;
  }

  public List<String> getQueues() {
    return queues;
  }

  public void setQueues(List<String> queues) {
    this.queues = queues;
  }

  public int getBatchSize() {
    return batchSize;
  }

  public void setBatchSize(int batchSize) {
    this.batchSize = batchSize;
  }

  public int getConcurrency() {
    return concurrency;
  }

  public void setConcurrency(int concurrency) {
    this.concurrency = concurrency;
  }

  public int getBufferSize() {
    return bufferSize;
  }

  public void setBufferSize(int bufferSize) {
    this.bufferSize = bufferSize;
  }

  public Duration getLease() {
    return lease;
  }

  public void setLease(Duration lease) {
    this.lease = lease;
  }

  public Duration getRenewInterval() {
    return renewInterval;
  }

  public void setRenewInterval(Duration renewInterval) {
    this.renewInterval = renewInterval;
  }

  public Duration getStartMargin() {
    return startMargin;
  }

  public void setStartMargin(Duration startMargin) {
    this.startMargin = startMargin;
  }

  public Duration getPollInterval() {
    return pollInterval;
  }

  public void setPollInterval(Duration pollInterval) {
    this.pollInterval = pollInterval;
  }

  public double getPollJitter() {
    return pollJitter;
  }

  public void setPollJitter(double pollJitter) {
    this.pollJitter = pollJitter;
  }

  public boolean isNotifications() {
    return notifications;
  }

  public boolean isLocalHandoff() {
    return localHandoff;
  }

  public void setLocalHandoff(boolean localHandoff) {
    this.localHandoff = localHandoff;
  }

  public void setNotifications(boolean notifications) {
    this.notifications = notifications;
  }

  public Duration getShutdownGrace() {
    return shutdownGrace;
  }

  public void setShutdownGrace(Duration shutdownGrace) {
    this.shutdownGrace = shutdownGrace;
  }

  public int getCompletionBatchSize() {
    return completionBatchSize;
  }

  public void setCompletionBatchSize(int completionBatchSize) {
    this.completionBatchSize = completionBatchSize;
  }

  public Duration getCompletionMaxDelay() {
    return completionMaxDelay;
  }

  public void setCompletionMaxDelay(Duration completionMaxDelay) {
    this.completionMaxDelay = completionMaxDelay;
  }

  public Duration getStatementTimeout() {
    return statementTimeout;
  }

  public void setStatementTimeout(Duration statementTimeout) {
    this.statementTimeout = statementTimeout;
  }

  public Duration getLockTimeout() {
    return lockTimeout;
  }

  public void setLockTimeout(Duration lockTimeout) {
    this.lockTimeout = lockTimeout;
  }

  public Duration getIdleInTransactionTimeout() {
    return idleInTransactionTimeout;
  }

  public void setIdleInTransactionTimeout(Duration idleInTransactionTimeout) {
    this.idleInTransactionTimeout = idleInTransactionTimeout;
  }

  public int getMaxPayloadBytes() {
    return maxPayloadBytes;
  }

  public void setMaxPayloadBytes(int maxPayloadBytes) {
    this.maxPayloadBytes = maxPayloadBytes;
  }

  public Duration getHealthDetailsMaxAge() {
    return healthDetailsMaxAge;
  }

  public void setHealthDetailsMaxAge(Duration healthDetailsMaxAge) {
    this.healthDetailsMaxAge = healthDetailsMaxAge;
  }

  public Duration getHealthTimeout() {
    return healthTimeout;
  }

  public void setHealthTimeout(Duration healthTimeout) {
    this.healthTimeout = healthTimeout;
  }

  public Duration getMetricsRefreshInterval() {
    return metricsRefreshInterval;
  }

  public void setMetricsRefreshInterval(Duration metricsRefreshInterval) {
    this.metricsRefreshInterval = metricsRefreshInterval;
  }

  public boolean isMetricsEnabled() {
    return metricsEnabled;
  }

  public void setMetricsEnabled(boolean metricsEnabled) {
    this.metricsEnabled = metricsEnabled;
  }

  public DirectConnection getDirectConnection() {
    return directConnection;
  }

  public Maintenance getMaintenance() {
    return maintenance;
  }

  public Map<String, Kind> getKinds() {
    return kinds;
  }

  public void setKinds(Map<String, Kind> kinds) {
    this.kinds = kinds;
  }
}
