package dev.relay;

import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.runtime.Engine;
import dev.relay.internal.runtime.Handoffs;
import dev.relay.internal.runtime.VirtualThreads;
import dev.relay.internal.runtime.WorkerIds;
import dev.relay.internal.store.WorkStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * The worker runtime: claims committed work of the kinds it has handlers for, runs the handlers
 * under renewed leases, and records their outcomes with guarded writes. Build one per process,
 * share it, start it, and close it on shutdown:
 *
 * <pre>{@code
 * Relay relay = Relay.builder(dataSource)
 *     .handle("order_received", claim -> Outcome.done(mailer.send(claim.workId(), claim.payload())))
 *     .lease(Duration.ofMinutes(1))
 *     .build();
 * relay.start();
 * ...
 * relay.close();   // stops claiming, hands back unstarted work, waits a grace period
 * }</pre>
 *
 * <p>Inside, a claimer polls (with jitter) and wakes on {@code LISTEN/NOTIFY}; claimed work waits
 * in a bounded local buffer for one of {@code concurrency} handler slots; a lease keeper renews
 * every claim this worker holds in one guarded transaction per tick (heartbeats: a handler may run
 * far longer than one lease, up to its kind's {@link KindPolicy#maxRunTime()}), tells a handler at
 * once when its claim is lost, and passes cancel requests on; a completer records outcomes in
 * batches, one transaction per batch with the guard checked per row.
 *
 * <p>What it promises: committed work is attempted while a worker runs and recovered after any
 * worker stops; a stale claim (lease expired, newer generation) never records an outcome; an
 * attempt whose effect is unknown is never recorded as "did not happen". What it never claims: that
 * an external effect happened exactly once, that a lease expiry stopped the old attempt's call,
 * that a {@code failed} or {@code cancelled} row had no effect at the receiver, that a purged row
 * was forgotten by the receiver, or any order beyond what an ordering key and its sequence define.
 * Delivery can repeat: receivers make repeats safe by deduplicating on {@link Claim#workId()} (the
 * inbox in {@code dev.relay.receiver} does); see {@code docs/guide.md}.
 *
 * <p>Several Relay instances (in one process or many) may share one database; each needs its own
 * worker ID (the default is unique). Thread-safe. Connections come from the {@link DataSource} for
 * one short transaction each; the LISTEN connection is held for the runtime's life (see {@link
 * Builder#listenConnections}).
 */
public final class Relay implements AutoCloseable {
  /** Default schema: {@code relay}. */
  public static final String DEFAULT_SCHEMA = "relay";

  /** Default queue list: the one queue {@link Work#DEFAULT_QUEUE}. */
  public static final List<String> DEFAULT_QUEUES = List.of(Work.DEFAULT_QUEUE);

  /**
   * Default most rows per claim transaction: 500. A ceiling, reached only in a backlog: each claim
   * takes only the room that is free (handler slots and the buffer the worker wants now, which is
   * bounded by about a second of work), so a worker that is not in a backlog claims what it can
   * start, and a worker draining a backlog claims in fewer, larger transactions.
   */
  public static final int DEFAULT_BATCH_SIZE = 500;

  /** Default handler slots: 8. */
  public static final int DEFAULT_CONCURRENCY = 8;

  /**
   * Default most claimed, unstarted items held locally: 1,000. A ceiling: the worker holds only
   * what its handlers start while the next claim is on its way (at least one per handler slot) and
   * never more than can start within the lease, so slow handlers hold few and fast handlers in a
   * backlog get claims large enough to keep them busy.
   */
  public static final int DEFAULT_BUFFER_SIZE = 1000;

  /** Default lease: 60 s. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(60);

  /** Default renew interval for the default lease (unset: a third of the lease). */
  public static final Duration DEFAULT_RENEW_INTERVAL = Duration.ofSeconds(20);

  /** Default start margin for the default lease (unset: a quarter of the lease). */
  public static final Duration DEFAULT_START_MARGIN = Duration.ofSeconds(15);

  /** Default longest wait between polls: 2 s. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(2);

  /** Default poll jitter: each wait is shortened by up to 25 %. */
  public static final double DEFAULT_POLL_JITTER = 0.25;

  /** Default shutdown grace period: 30 s. */
  public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(30);

  /**
   * Default most outcomes per completion transaction: 500. A ceiling, reached only under load:
   * while outcomes arrive slowly each is recorded at once (two writers), and batches grow only
   * while outcomes queue up behind a commit.
   */
  public static final int DEFAULT_COMPLETION_BATCH_SIZE = 500;

  /** Default longest wait for a completion batch to fill: 20 ms. */
  public static final Duration DEFAULT_COMPLETION_MAX_DELAY = Duration.ofMillis(20);

  /** Default {@code statement_timeout} of Relay's own transactions: 30 s. */
  public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);

  /** Default {@code lock_timeout} of Relay's own transactions: 10 s. */
  public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(10);

  /** Default {@code idle_in_transaction_session_timeout} of Relay's own transactions: 60 s. */
  public static final Duration DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT = Duration.ofSeconds(60);

  /** Longest {@code maxRunTime} a kind may have: 30 days. */
  static final Duration MAX_RUN_TIME_LIMIT = Duration.ofDays(30);

  /** Longest database timeout: 24 h. */
  static final Duration MAX_DATABASE_TIMEOUT = Duration.ofHours(24);

  private final DataSource dataSource;
  private final RelayConfig config;
  private final Map<String, Handler> handlers;
  private final Executor executor;
  private final boolean virtualThreads;
  private final RelayEventListener listener;
  private final RelayTracing tracing;
  private final ConnectionFactory listenConnections;
  private final boolean localHandoff;
  private final WorkStore store;
  private final AtomicInteger phase = new AtomicInteger(); // 0 new, 1 started, 2 closed
  private volatile Engine engine;

  private Relay(Builder b, RelayConfig config) {
    this.dataSource = b.dataSource;
    this.config = config;
    this.handlers = Map.copyOf(b.handlers);
    this.executor = b.executor;
    this.virtualThreads = b.virtualThreads;
    this.listener = b.listener;
    this.tracing = b.tracing;
    this.listenConnections =
        b.listenConnections != null ? b.listenConnections : b.dataSource::getConnection;
    this.localHandoff = b.localHandoff;
    this.store =
        new WorkStore(
            SchemaName.of(config.schema()),
            new Timeouts(
                config.statementTimeout(),
                config.lockTimeout(),
                config.idleInTransactionTimeout()));
  }

  /**
   * The version of this Relay library, as its build named it ({@code 0.1.0-SNAPSHOT}): what a
   * worker registers for {@code relay migrate} to name during a rolling upgrade, and what the
   * {@code relay} commands print for {@code -V}. Read from a resource of relay-core's own jar, so
   * it survives shading into an application's single jar; {@code development} only when the classes
   * run unbuilt (an IDE that skips resource filtering).
   */
  public static String version() {
    return VersionHolder.VERSION;
  }

  private static final class VersionHolder {
    static final String VERSION = read();

    private static String read() {
      Properties p = new Properties();
      try (InputStream in = Relay.class.getResourceAsStream("relay-version.properties")) {
        if (in != null) {
          p.load(in);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("reading relay-core's relay-version.properties", e);
      }
      String v = p.getProperty("version", "");
      return v.isBlank() || v.startsWith("${") ? "development" : v;
    }
  }

  /** A builder for a runtime that uses {@code dataSource} for its connections. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /** The validated settings. */
  public RelayConfig config() {
    return config;
  }

  /** This worker's ID, stored in {@code claimed_by} of the work it holds. */
  public String workerId() {
    return config.workerId();
  }

  /**
   * Registers each kind's policy in the {@code kind} table, then starts claiming. Call once: a
   * start that throws closes this runtime, so to try again (say, while the database restarts) build
   * a new one.
   *
   * @throws IllegalStateException if already started or closed
   * @throws RelayException if the kinds cannot be registered (nothing was started)
   */
  public void start() {
    if (!phase.compareAndSet(0, 1)) {
      throw new IllegalStateException(
          phase.get() == 1 ? "relay already started" : "relay is closed; build a new one");
    }
    Engine e =
        new Engine(
            dataSource,
            config,
            handlers,
            executor,
            virtualThreads,
            listener,
            tracing,
            listenConnections,
            localHandoff);
    try {
      e.start();
    } catch (RuntimeException ex) {
      phase.set(2);
      e.close();
      throw ex;
    }
    engine = e;
  }

  /** Whether this runtime takes work by local hand-off ({@link Builder#localHandoff}). */
  public boolean localHandoff() {
    return localHandoff;
  }

  /** The running runtime's hand-off, or {@code null} (off, not started, or closed). */
  Handoffs handoffs() {
    Engine e = engine;
    return e != null && phase.get() == 1 ? e.handoffs() : null;
  }

  /** Whether {@link #start()} was called and {@link #close()} not yet. */
  public boolean isRunning() {
    return phase.get() == 1;
  }

  /**
   * Cancels work, audited with {@code actor} and {@code reason}. Ready work (including work waiting
   * for a retry) becomes {@code cancelled} at once. Running work gets a cancel request: its worker
   * sees it at the next lease renewal and tells the handler ({@link Claim#isCancelRequested()}),
   * then records {@code cancelled} with a guarded write; if the handler reports done, {@code done}
   * is recorded instead, because the effect happened. <b>A call already in flight is not
   * recalled.</b> Failed work becomes {@code cancelled} too (its evidence kept), which releases an
   * ordering key its failed head holds. Done and cancelled work is left as it is. Works whether or
   * not this runtime is started. It is an operator's write: with the database roles of {@code relay
   * migrate --roles}, the connection's user needs {@code relay_operator} (the worker role alone is
   * refused, and nothing changes); a handler ending its own work returns {@link Outcome#cancel}.
   *
   * @throws InvalidWorkException if an argument is empty or too long
   */
  public CancelResult cancel(String workId, String actor, String reason) {
    requireText(workId, "workId", Outbox.MAX_WORK_ID_LENGTH);
    requireText(actor, "actor", 200);
    requireText(reason, "reason", 2000);
    WorkStore.CancelRow row;
    try (Connection c = dataSource.getConnection()) {
      row = store.cancel(c, workId, actor, reason);
    } catch (SQLException e) {
      throw SqlErrors.translate("cancel " + workId, e);
    }
    CancelResult.Status status =
        switch (row.result()) {
          case "cancelled" -> CancelResult.Status.CANCELLED;
          case "cancel_requested" -> CancelResult.Status.CANCEL_REQUESTED;
          case "already_finished" -> CancelResult.Status.ALREADY_FINISHED;
          default -> CancelResult.Status.NOT_FOUND;
        };
    return new CancelResult(workId, status, row.fromState());
  }

  /**
   * Stops claiming, releases claimed work whose handlers have not started (so another worker can
   * take it at once), waits up to the shutdown grace period for running handlers and records their
   * outcomes. Handlers still running after that are told to stop ({@link
   * Claim.StopReason#SHUTDOWN}) and interrupted, and their claims are no longer renewed. One that
   * returns within about half a second has its attempt recorded with error kind {@code shutdown}:
   * an unknown effect goes to the kind's {@link UnknownOutcomePolicy} (the attempt counts), and a
   * retry is due at once, without backoff. One that does not return is left to its lease: its claim
   * is not released while a call may be in flight, another worker takes the work when the lease
   * ends, and what the handler returns later is not recorded. Outcomes already reported are
   * recorded (their leases still renewed) until the grace period plus 1 s; then every connection of
   * this runtime still in use is aborted and no thread of it gets another one, so it returns within
   * about the grace period plus 1 s even when the database hangs, and writes nothing after it
   * returned. Idempotent.
   */
  @Override
  public void close() {
    int was = phase.getAndSet(2);
    if (was == 1 && engine != null) {
      engine.close();
    }
  }

  private static void requireText(String value, String field, int max) {
    if (value == null || value.isBlank()) {
      throw new InvalidWorkException(null, field, "is empty");
    }
    if (value.length() > max) {
      throw new InvalidWorkException(
          null, field, "has " + value.length() + " characters; the limit is " + max);
    }
  }

  /**
   * Configures a {@link Relay}. Every setting has a default (the {@code DEFAULT_*} constants) and
   * is validated at {@link #build()}, with a message naming the setting and its allowed range.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private final Map<String, Handler> handlers = new LinkedHashMap<>();
    private final Map<String, KindPolicy> policies = new LinkedHashMap<>();
    private String workerId;
    private String schema = DEFAULT_SCHEMA;
    private List<String> queues = DEFAULT_QUEUES;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int concurrency = DEFAULT_CONCURRENCY;
    private int bufferSize = DEFAULT_BUFFER_SIZE;
    private Duration lease = DEFAULT_LEASE;
    private Duration renewInterval;
    private Duration startMargin;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private double pollJitter = DEFAULT_POLL_JITTER;
    private boolean notifications = true;
    private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;
    private int completionBatchSize = DEFAULT_COMPLETION_BATCH_SIZE;
    private Duration completionMaxDelay = DEFAULT_COMPLETION_MAX_DELAY;
    private Duration statementTimeout = DEFAULT_STATEMENT_TIMEOUT;
    private Duration lockTimeout = DEFAULT_LOCK_TIMEOUT;
    private Duration idleInTransactionTimeout = DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT;
    private Executor executor;
    private boolean virtualThreads;
    private RelayEventListener listener = RelayEventListener.NONE;
    private RelayTracing tracing = RelayTracing.NONE;
    private ConnectionFactory listenConnections;
    private boolean localHandoff;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** Runs {@code kind} with {@code handler} under {@link KindPolicy#DEFAULT}. */
    public Builder handle(String kind, Handler handler) {
      return handle(kind, KindPolicy.DEFAULT, handler);
    }

    /**
     * Runs {@code kind} with {@code handler} under {@code policy}; a later call replaces one. The
     * handler may be a {@link BatchHandler} (several claims per call) or an {@link AsyncHandler}
     * (an attempt holds a slot, not a thread, until its stage completes), not both.
     */
    public Builder handle(String kind, KindPolicy policy, Handler handler) {
      handlers.put(kind, Objects.requireNonNull(handler, "handler"));
      policies.put(kind, Objects.requireNonNull(policy, "policy"));
      return this;
    }

    /** This worker's ID (1-200 characters; default: host, process ID and a random suffix). */
    public Builder workerId(String workerId) {
      this.workerId = workerId;
      return this;
    }

    /** The schema holding Relay's tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The queues to claim from (1-100 distinct names; default {@code default}). */
    public Builder queues(String... queues) {
      this.queues = List.of(queues);
      return this;
    }

    /**
     * The most rows one claim transaction takes (1-1,000; default 500, reached only in a backlog).
     */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** The most handlers running at once (1-10,000; default 8). */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /**
     * The most claimed-but-unstarted items held locally (0-10,000; default 1,000). A ceiling: the
     * worker holds only what its handlers start during about two claim round trips (at least one
     * per handler slot), never more than can start within the lease; work in the buffer holds a
     * lease that nobody else can use.
     */
    public Builder bufferSize(int bufferSize) {
      this.bufferSize = bufferSize;
      return this;
    }

    /**
     * How long a claim lasts without renewal, on the database clock (100 ms-24 h; default 60 s).
     * While a handler runs (and until its outcome is recorded) the lease is renewed every {@link
     * #renewInterval}, so a handler may run far longer than one lease, up to its kind's {@link
     * KindPolicy#maxRunTime()}; the lease only decides how soon the work of a worker that stopped
     * (or was cut off from PostgreSQL) is taken over.
     */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /**
     * How often held claims are renewed (10 ms up to the lease; default a third of it). Each
     * renewal runs with statement, lock and idle timeouts no longer than this interval, so one that
     * cannot finish in time fails and is tried again.
     */
    public Builder renewInterval(Duration renewInterval) {
      this.renewInterval = renewInterval;
      return this;
    }

    /**
     * A claimed item whose remaining lease is below this margin when a slot frees is released for
     * other workers instead of started (zero up to the lease; default a quarter of it).
     */
    public Builder startMargin(Duration startMargin) {
      this.startMargin = startMargin;
      return this;
    }

    /**
     * The longest wait between claim polls (10 ms-1 h; default 2 s). With notifications on this is
     * the backstop for a lost notification; with them off, it bounds the pickup latency.
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /** The fraction by which each poll wait is randomly shortened (0.0-1.0; default 0.25). */
    public Builder pollJitter(double pollJitter) {
      this.pollJitter = pollJitter;
      return this;
    }

    /**
     * Whether to wake on {@code LISTEN/NOTIFY} (default on). Turn it off together with {@link
     * Outbox.Builder#notifications(boolean)} when enqueue rates make NOTIFY's commit lock costly;
     * the workers then rely on polling.
     */
    public Builder notifications(boolean notifications) {
      this.notifications = notifications;
      return this;
    }

    /**
     * Whether this runtime takes new work that its own process enqueues by local hand-off (default
     * off): an {@link Outbox#handingOffTo(Relay) outbox handing off to it} inserts such work
     * already claimed by this worker and starts it right after the producer's commit ({@link
     * Outbox#commitAndStart}), with no claim round trip. Only work a claim would have allowed is
     * handed off (unkeyed, without dependencies, available now, of a kind with a one-claim handler
     * and no limits, on a queue this worker serves) and only while a handler slot is free;
     * everything else is enqueued as usual. Nothing starts without proof of commit; work whose
     * commit is not proven waits out its lease and is then claimed. See {@code docs/guide.md},
     * "Local hand-off". At start the worker registers its kinds, queues and lease in the {@code
     * handoff} table, and removes them at close.
     */
    public Builder localHandoff(boolean localHandoff) {
      this.localHandoff = localHandoff;
      return this;
    }

    /**
     * How the dedicated LISTEN connection is opened (default: taken from the data source and kept,
     * which holds one pooled connection for the runtime's life, so size the pool for it). A pool
     * cannot return a connection with a live LISTEN to other users, so passing {@code () ->
     * DriverManager.getConnection(url, user, password)} keeps the pool whole.
     */
    public Builder listenConnections(ConnectionFactory factory) {
      this.listenConnections = factory;
      return this;
    }

    /** How long {@link Relay#close()} waits for running handlers (0-1 h; default 30 s). */
    public Builder shutdownGrace(Duration shutdownGrace) {
      this.shutdownGrace = shutdownGrace;
      return this;
    }

    /**
     * The most outcomes recorded in one transaction (1-10,000; default 500, reached only under
     * load).
     */
    public Builder completionBatchSize(int completionBatchSize) {
      this.completionBatchSize = completionBatchSize;
      return this;
    }

    /**
     * The longest an outcome waits for its batch to fill (0-10 s; default 20 ms). It must be
     * shorter than the lease minus the renew interval, the least lease a claim may have left when
     * its handler returns, so that waiting for a batch alone can never make an outcome stale.
     */
    public Builder completionMaxDelay(Duration completionMaxDelay) {
      this.completionMaxDelay = completionMaxDelay;
      return this;
    }

    /**
     * The {@code statement_timeout} set (with {@code SET LOCAL}) on each of Relay's own
     * transactions (1 ms-24 h; default 30 s). Lease renewals use at most the renew interval.
     */
    public Builder statementTimeout(Duration statementTimeout) {
      this.statementTimeout = statementTimeout;
      return this;
    }

    /**
     * The {@code lock_timeout} set on each of Relay's own transactions (1 ms-24 h; default 10 s).
     * Lease renewals use at most the renew interval.
     */
    public Builder lockTimeout(Duration lockTimeout) {
      this.lockTimeout = lockTimeout;
      return this;
    }

    /**
     * The {@code idle_in_transaction_session_timeout} set on each of Relay's own transactions (1
     * ms-24 h; default 60 s): a transaction of a worker that stalls mid-way is ended by the server
     * and its row locks freed. Lease renewals use at most the renew interval.
     */
    public Builder idleInTransactionTimeout(Duration idleInTransactionTimeout) {
      this.idleInTransactionTimeout = idleInTransactionTimeout;
      return this;
    }

    /**
     * The executor that runs handlers (default: {@code concurrency} platform threads, owned and
     * shut down by the runtime). Relay never runs more than {@code concurrency} handlers at once on
     * it and never shuts it down; Java 21 users may pass {@code
     * Executors.newVirtualThreadPerTaskExecutor()}.
     */
    public Builder executor(Executor executor) {
      this.executor = executor;
      return this;
    }

    /**
     * Runs each handler on a virtual thread of its own (Java 21 and later; default off), still
     * never more than {@code concurrency} at once. For handlers that mostly wait on the network (an
     * HTTP receiver that answers in 200 ms: {@code concurrency(1000)} delivers about 5,000 a second
     * without 1,000 platform threads). Leases, renewal, cancellation, the handler timeout (an
     * interrupt) and the shutdown bounds are the same as on platform threads. Off by default
     * because a handler that holds a monitor ({@code synchronized}) while it blocks pins its
     * carrier thread on Java 21-23, and thread-local caches are per handler call. {@link #build}
     * refuses it on a JVM without virtual threads, and together with {@link #executor}.
     */
    public Builder virtualThreads(boolean virtualThreads) {
      this.virtualThreads = virtualThreads;
      return this;
    }

    /** The event listener (default none); see {@link RelayEventListener} for its contract. */
    public Builder listener(RelayEventListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * The tracing hook (default {@link RelayTracing#NONE}): each attempt's handler runs inside the
     * scope it opens, and it receives every event besides {@link #listener}. With none, nothing of
     * it runs.
     */
    public Builder tracing(RelayTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /**
     * Validates every setting and builds the runtime (not started).
     *
     * @throws InvalidConfigurationException naming the first setting out of range
     */
    public Relay build() {
      String id = workerId == null ? WorkerIds.generate() : workerId;
      String idProblem = WorkerIds.problem(id);
      if (idProblem != null) {
        throw new InvalidConfigurationException("workerId", idProblem);
      }
      SchemaName schemaName = SchemaName.of(schema);
      if (queues == null || queues.isEmpty() || queues.size() > 100) {
        throw new InvalidConfigurationException("queues", "must name 1-100 queues");
      }
      Set<String> seen = new HashSet<>();
      for (String q : queues) {
        String problem = Outbox.nameProblem(q);
        if (problem != null) {
          throw new InvalidConfigurationException("queues", problem);
        }
        if (!seen.add(q)) {
          throw new InvalidConfigurationException("queues", "'" + q + "' is named twice");
        }
      }
      if (handlers.isEmpty()) {
        throw new InvalidConfigurationException(
            "handlers", "at least one kind needs a handler (Builder.handle)");
      }
      if (virtualThreads && executor != null) {
        throw new InvalidConfigurationException(
            "virtualThreads", "runs handlers on Relay's own executor: leave executor unset");
      }
      if (virtualThreads && !VirtualThreads.available()) {
        throw new InvalidConfigurationException(
            "virtualThreads",
            "needs Java 21 or later (virtual threads); this JVM is Java "
                + Runtime.version().feature());
      }
      range("batchSize", batchSize, 1, 1000);
      range("concurrency", concurrency, 1, 10_000);
      range("bufferSize", bufferSize, 0, 10_000);
      range("completionBatchSize", completionBatchSize, 1, 10_000);
      range("lease", lease, Duration.ofMillis(100), Duration.ofHours(24));
      Duration renew = renewInterval != null ? renewInterval : lease.dividedBy(3);
      if (renew == null
          || renew.compareTo(Duration.ofMillis(10)) < 0
          || renew.compareTo(lease) >= 0) {
        throw new InvalidConfigurationException(
            "renewInterval",
            "must be at least 10 ms and shorter than the lease (" + lease + "), was " + renew);
      }
      Duration margin = startMargin != null ? startMargin : lease.dividedBy(4);
      if (margin.isNegative() || margin.compareTo(lease) >= 0) {
        throw new InvalidConfigurationException(
            "startMargin",
            "must be zero or more and shorter than the lease (" + lease + "), was " + margin);
      }
      range("pollInterval", pollInterval, Duration.ofMillis(10), Duration.ofHours(1));
      if (!(pollJitter >= 0.0 && pollJitter <= 1.0)) {
        throw new InvalidConfigurationException(
            "pollJitter", "must be between 0.0 and 1.0, was " + pollJitter);
      }
      range("shutdownGrace", shutdownGrace, Duration.ZERO, Duration.ofHours(1));
      range("completionMaxDelay", completionMaxDelay, Duration.ZERO, Duration.ofSeconds(10));
      Duration leastLeaseLeft = lease.minus(renew);
      if (completionMaxDelay.compareTo(leastLeaseLeft) >= 0) {
        throw new InvalidConfigurationException(
            "completionMaxDelay",
            "must be shorter than the lease minus the renew interval ("
                + lease
                + " - "
                + renew
                + " = "
                + leastLeaseLeft
                + "), the least lease a claim may have left when its handler returns, was "
                + completionMaxDelay);
      }
      range("statementTimeout", statementTimeout, Duration.ofMillis(1), MAX_DATABASE_TIMEOUT);
      range("lockTimeout", lockTimeout, Duration.ofMillis(1), MAX_DATABASE_TIMEOUT);
      range(
          "idleInTransactionTimeout",
          idleInTransactionTimeout,
          Duration.ofMillis(1),
          MAX_DATABASE_TIMEOUT);
      if (notifications) {
        Coordination.checkedChannel(schemaName, "schema");
      }
      Map<String, KindPolicy> resolved = new LinkedHashMap<>();
      for (Map.Entry<String, KindPolicy> e : policies.entrySet()) {
        resolved.put(e.getKey(), resolve(e.getKey(), e.getValue()));
        checkHorizonOutlastsTakeover(e.getKey(), e.getValue().dedupHorizon());
        if (handlers.get(e.getKey()) instanceof BatchHandler
            && handlers.get(e.getKey()) instanceof AsyncHandler) {
          throw new InvalidConfigurationException(
              "kind " + e.getKey() + ": handler",
              "is both a BatchHandler and an AsyncHandler; a handler is one or the other");
        }
        if (handlers.get(e.getKey()) instanceof BatchHandler batch) {
          range(
              "kind " + e.getKey() + ": maxBatchSize",
              batch.maxBatchSize(),
              1,
              BatchHandler.MAX_BATCH_SIZE_LIMIT);
        }
      }
      RelayConfig config =
          new RelayConfig(
              id,
              schemaName.sql(),
              new ArrayList<>(queues),
              batchSize,
              concurrency,
              bufferSize,
              lease,
              renew,
              margin,
              pollInterval,
              pollJitter,
              notifications,
              shutdownGrace,
              completionBatchSize,
              completionMaxDelay,
              statementTimeout,
              lockTimeout,
              idleInTransactionTimeout,
              resolved);
      return new Relay(this, config);
    }

    /**
     * A worker that dies is replaced after its lease and up to one poll interval more; past the
     * horizon every claim fails the work ({@code horizon_passed}), so a horizon shorter than that
     * would turn every crash into a failure. A zero horizon (the receiver keeps no memory) is none.
     */
    private void checkHorizonOutlastsTakeover(String kind, Duration horizon) {
      Duration takeover = lease.plus(pollInterval);
      if (!horizon.isZero() && horizon.compareTo(takeover) < 0) {
        throw new InvalidConfigurationException(
            "kind " + kind + ": dedupHorizon",
            "the receiver's deduplication horizon ("
                + horizon
                + ") is shorter than the lease ("
                + lease
                + ") plus the pollInterval ("
                + pollInterval
                + "), after which another worker takes over the work of one that died: the"
                + " takeover would always come too late and fail the work (horizon_passed)."
                + " Lengthen dedupHorizon, or shorten lease or pollInterval");
      }
    }

    private static KindPolicy resolve(String kind, KindPolicy p) {
      String problem = Outbox.nameProblem(kind);
      if (problem != null) {
        throw new InvalidConfigurationException("handle(kind)", problem);
      }
      String at = "kind " + kind + ": ";
      range(at + "backoffBase", p.backoffBase(), Duration.ofMillis(1), Duration.ofDays(365));
      range(at + "backoffCap", p.backoffCap(), p.backoffBase(), Duration.ofDays(365));
      range(at + "maxAttempts", p.maxAttempts(), 1, KindPolicy.MAX_ATTEMPTS_LIMIT);
      range(at + "maxSnoozes", p.maxSnoozes(), 0, KindPolicy.MAX_SNOOZES_LIMIT);
      range(at + "maxElapsed", p.maxElapsed(), Duration.ofMillis(1), Duration.ofDays(3650));
      range(at + "dedupHorizon", p.dedupHorizon(), Duration.ZERO, Duration.ofDays(3650));
      // Independent of the lease: heartbeats keep the claim while the handler runs.
      range(at + "maxRunTime", p.maxRunTime(), Duration.ofMillis(1), MAX_RUN_TIME_LIMIT);
      FlowLimits limits = p.limits();
      optionalRange(at + "maxRunning", limits.maxRunning());
      optionalRange(at + "maxRunningPerGroup", limits.maxRunningPerGroup());
      optionalRange(at + "rateLimit", limits.rateLimit());
      if (limits.rateLimit() != null || limits.rateInterval() != null) {
        if (limits.rateLimit() == null) {
          throw new InvalidConfigurationException(
              at + "rateLimit", "is missing, though a rateInterval is set");
        }
        range(
            at + "rateInterval",
            limits.rateInterval(),
            FlowLimits.MIN_RATE_INTERVAL,
            FlowLimits.MAX_RATE_INTERVAL);
      }
      if (p.unknownOutcome() instanceof UnknownOutcomePolicy.Retry
          && p.maxElapsed().compareTo(p.dedupHorizon()) > 0) {
        throw new InvalidConfigurationException(
            at + "maxElapsed",
            "the retry window ("
                + p.maxElapsed()
                + ") may not be longer than the receiver's deduplication horizon ("
                + p.dedupHorizon()
                + ") when an unknown outcome is retried: a retry after the receiver forgot the"
                + " work ID may repeat the effect. Shorten maxElapsed, or choose park or"
                + " reconcile for unknown outcomes");
      }
      return p;
    }

    private static void optionalRange(String setting, Integer value) {
      if (value != null) {
        range(setting, value, 1, FlowLimits.MAX_LIMIT);
      }
    }

    private static void range(String setting, int value, int min, int max) {
      if (value < min || value > max) {
        throw new InvalidConfigurationException(
            setting, "must be between " + min + " and " + max + ", was " + value);
      }
    }

    private static void range(String setting, Duration value, Duration min, Duration max) {
      if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new InvalidConfigurationException(
            setting, "must be between " + min + " and " + max + ", was " + value);
      }
    }
  }
}
