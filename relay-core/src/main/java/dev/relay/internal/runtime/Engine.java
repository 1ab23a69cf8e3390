package dev.relay.internal.runtime;

import dev.relay.ConnectionFactory;
import dev.relay.Handler;
import dev.relay.KindPolicy;
import dev.relay.Outcome;
import dev.relay.Reconciliation;
import dev.relay.RelayConfig;
import dev.relay.RelayEventListener;
import dev.relay.RelayException;
import dev.relay.UnknownOutcomePolicy;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running parts of one {@link Relay}: claimer, dispatcher, handler slots, lease keeper,
 * completer and (optionally) notifier, and the table of this worker's live claims they share. Built
 * and driven by {@link dev.relay.Relay}; not for direct use.
 *
 * <p>Every connection the parts use comes through {@link #connection} (or, for the LISTEN
 * connection, {@link #listenConnection}), which keeps the ones in use in a table: when {@link
 * #close()} reaches its bound it aborts those still in use ({@link Connection#abort}) and hands out
 * no more, so no Relay thread can start a database write after {@code close()} returned.
 */
public final class Engine {
  private static final Logger log = LoggerFactory.getLogger(Engine.class);

  /**
   * How long {@link #close()} may take beyond the shutdown grace period to stop its threads and
   * record the outcomes already reported; then it aborts what is still in use and returns.
   */
  static final long CLOSE_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(1_000);

  final RelayConfig config;
  final String workerId;
  final WorkStore store;
  final Events events;
  final ConcurrentHashMap<ClaimRef, LiveClaim> live = new ConcurrentHashMap<>();

  final LinkedBlockingQueue<LiveClaim> buffer = new LinkedBlockingQueue<>();
  final AtomicInteger inFlight = new AtomicInteger();
  final AtomicLong staleWrites = new AtomicLong();

  /** Handler run time, a moving average in nanoseconds (0 until a handler returned). */
  final AtomicLong runNanos = new AtomicLong();

  final Claimer claimer;

  private final DataSource dataSource;
  private final Map<String, Handler> handlers;
  private final Semaphore slots;
  private final Executor executor;
  private final ExecutorService ownedExecutor;
  private final LeaseKeeper keeper;
  private final Completer completer;
  private final Notifier notifier;
  private final Object handlerMonitor = new Object();
  private final Set<Connection> inUse = ConcurrentHashMap.newKeySet();
  private volatile boolean connectionsClosed;
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean dispatching = true;
  private Thread claimerThread;
  private Thread dispatcherThread;
  private Thread keeperThread;
  private Thread completerThread;
  private Thread notifierThread;

  /** Wires the parts; nothing runs until {@link #start()}. */
  public Engine(
      DataSource dataSource,
      RelayConfig config,
      Map<String, Handler> handlers,
      Executor executor,
      RelayEventListener listener,
      ConnectionFactory listenConnections) {
    this.dataSource = dataSource;
    this.config = config;
    this.workerId = config.workerId();
    this.handlers = Map.copyOf(handlers);
    SchemaName schema = SchemaName.of(config.schema());
    Timeouts timeouts =
        new Timeouts(
            config.statementTimeout(), config.lockTimeout(), config.idleInTransactionTimeout());
    this.store = new WorkStore(schema, timeouts);
    this.events = new Events(listener);
    this.slots = new Semaphore(config.concurrency());
    if (executor == null) {
      this.ownedExecutor =
          Executors.newFixedThreadPool(config.concurrency(), threads("relay-handler-"));
      this.executor = ownedExecutor;
    } else {
      this.ownedExecutor = null;
      this.executor = executor;
    }
    this.claimer = new Claimer(this);
    // Renewals must fail fast rather than outlive the interval they keep: their own timeouts.
    this.keeper = new LeaseKeeper(this, new WorkStore(schema, renewalTimeouts(timeouts, config)));
    this.completer = new Completer(this);
    this.notifier =
        config.notifications()
            ? new Notifier(
                this,
                () -> listenConnection(listenConnections),
                Coordination.checkedChannel(schema, "schema"))
            : null;
  }

  /** Registers the kinds' policies, then starts the threads. */
  public void start() {
    List<WorkStore.KindRow> rows = new ArrayList<>();
    for (Map.Entry<String, KindPolicy> e : config.kinds().entrySet()) {
      KindPolicy p = e.getValue();
      rows.add(
          new WorkStore.KindRow(
              e.getKey(),
              p.backoffBase(),
              p.backoffCap(),
              p.maxAttempts(),
              p.maxElapsed(),
              p.maxRunTime(), // stored in the handler_timeout column
              p.dedupHorizon(),
              p.unknownOutcome().storedName()));
    }
    try (Connection c = connection("register kinds")) {
      store.registerKinds(c, workerId, rows);
    } catch (SQLException e) {
      throw SqlErrors.translate("register kinds", e);
    }
    completerThread = thread("relay-completer-", completer);
    keeperThread = thread("relay-lease-keeper-", keeper);
    dispatcherThread = thread("relay-dispatcher-", this::dispatch);
    claimerThread = thread("relay-claimer-", claimer);
    if (notifier != null) {
      notifierThread = thread("relay-listener-", notifier);
    }
    log.info(
        "relay worker {} started: kinds {}, queues {}, concurrency {}, lease {}, notifications {}",
        workerId,
        config.kinds().keySet(),
        config.queues(),
        config.concurrency(),
        config.lease(),
        config.notifications() ? "on" : "off");
  }

  /**
   * See {@link dev.relay.Relay#close()}. One deadline bounds the whole shutdown: the grace period
   * for running handlers, then {@link #CLOSE_SLACK_NANOS} more to record the outcomes already
   * reported and stop the threads. At that bound, connections still in use are aborted, and no
   * thread of this runtime gets another one: nothing is written after this returns.
   */
  public void close() {
    long graceNanos = config.shutdownGrace().toNanos();
    long graceEnd = System.nanoTime() + graceNanos;
    long hardEnd = graceEnd + CLOSE_SLACK_NANOS;
    log.info("relay worker {} closing", workerId);
    // 1. Stop taking work.
    claimer.stop();
    if (notifier != null) {
      notifier.stop();
    }
    dispatching = false;
    if (dispatcherThread != null) {
      dispatcherThread.interrupt();
    }
    join(claimerThread, hardEnd);
    join(dispatcherThread, hardEnd);
    // 2. Hand back what never started, so another worker can take it at once.
    for (LiveClaim c : live.values()) {
      if (c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RELEASING)) {
        release(c);
      }
    }
    // 3. Let running handlers finish within the grace period (their leases are still renewed).
    synchronized (handlerMonitor) {
      long left;
      while (anyRunning() && (left = graceEnd - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(handlerMonitor, Math.min(left, 100_000_000L));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    // 4. Leave the rest to their leases: never release a claim whose call may be in flight, and
    // renew it no more. Outcomes waiting to be recorded are still renewed until step 5 ends.
    keeper.closing();
    for (LiveClaim c : live.values()) {
      if (c.phase.get() == LiveClaim.Phase.RUNNING) {
        log.warn(
            "{} still running after the shutdown grace period of {}: interrupting its handler;"
                + " the claim is left to its lease (until {}), after which another worker takes it",
            c,
            config.shutdownGrace(),
            c.leaseUntil());
        c.interrupt();
      }
    }
    // 5. Record the outcomes already reported, within the bound.
    completer.finish();
    join(completerThread, hardEnd);
    completer.abandon();
    keeper.stop();
    join(keeperThread, hardEnd);
    join(notifierThread, hardEnd);
    // 6. The bound: whatever still talks to the database is cut off, and nothing talks again.
    closeConnections();
    if (ownedExecutor != null) {
      ownedExecutor.shutdownNow();
    }
    log.info(
        "relay worker {} closed in {} ms ({} claims left to their leases, {} stale writes refused)",
        workerId,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - (graceEnd - graceNanos)),
        live.size(),
        staleWrites.get());
  }

  /** Refuses further connections and aborts those still in use. */
  private void closeConnections() {
    connectionsClosed = true;
    for (Connection c : inUse) {
      abort(c);
    }
  }

  private static void abort(Connection c) {
    try {
      // Runs at once on this thread: the socket is closed, and a thread blocked on it fails.
      c.abort(Runnable::run);
      log.info("aborted a connection still in use when relay closed");
    } catch (SQLException | RuntimeException e) {
      log.debug("aborting a connection failed", e);
    }
  }

  private boolean anyRunning() {
    for (LiveClaim c : live.values()) {
      if (c.phase.get() == LiveClaim.Phase.RUNNING) {
        return true;
      }
    }
    return false;
  }

  /** Takes buffered claims to free handler slots, in claim order. */
  private void dispatch() {
    long marginNanos = config.startMargin().toNanos();
    while (dispatching) {
      LiveClaim c;
      try {
        c = buffer.poll(250, TimeUnit.MILLISECONDS);
        if (c == null) {
          continue;
        }
        slots.acquire();
      } catch (InterruptedException e) {
        return; // closing; buffered claims are released by close()
      }
      // The start time is written before the phase turns RUNNING: the lease keeper reads the phase
      // first, and a RUNNING claim with no start time would look decades past its timeout.
      c.startedNanos = System.nanoTime();
      if (!c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RUNNING)) {
        slots.release(); // released meanwhile
        continue;
      }
      if (System.nanoTime() - (c.localLeaseDeadline() - marginNanos) >= 0) {
        c.phase.set(LiveClaim.Phase.RELEASING);
        slots.release();
        log.debug("{} cannot start within the start margin of its lease; released", c);
        release(c);
        continue;
      }
      keeper.wake();
      try {
        executor.execute(() -> runAttempt(c));
      } catch (RejectedExecutionException e) {
        log.warn("the handler executor refused {}; released for other workers", c);
        c.phase.set(LiveClaim.Phase.RELEASING);
        slots.release();
        release(c);
      }
    }
  }

  /** Runs one attempt on a handler thread and hands its outcome to the completer. */
  private void runAttempt(LiveClaim c) {
    Settlement settlement = null;
    try {
      c.bindThread(Thread.currentThread());
      settlement = attempt(c);
    } catch (RuntimeException | Error e) {
      log.error("relay failed while running {}; the claim is left to its lease", c, e);
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      c.unbindThread();
      Thread.interrupted(); // a timeout's interrupt must not leak into the thread's next task
      long took = System.nanoTime() - c.startedNanos;
      runNanos.accumulateAndGet(took, (avg, x) -> avg == 0 ? x : avg + (x - avg) / 8);
      if (settlement != null
          && c.phase.compareAndSet(LiveClaim.Phase.RUNNING, LiveClaim.Phase.FINISHING)) {
        if (!completer.submit(c, settlement)) {
          log.info(
              "{} finished after relay closed; its outcome is dropped and its lease left to expire",
              c);
          ended(c);
        }
      } else {
        ended(c);
      }
      slots.release();
      synchronized (handlerMonitor) {
        handlerMonitor.notifyAll();
      }
    }
  }

  private Settlement attempt(LiveClaim c) {
    UnknownOutcomePolicy policy = c.policy.unknownOutcome();
    if (c.reclaimed() && policy instanceof UnknownOutcomePolicy.Park) {
      return Decider.park(
          c, "lease_expired", "the previous claim's lease expired while its attempt may have run");
    }
    if (c.reclaimed() && policy instanceof UnknownOutcomePolicy.Reconcile r) {
      Reconciliation answer = reconcile(r, c);
      if (answer.verdict() == Reconciliation.Verdict.ACCEPTED) {
        return Decider.accepted(c, answer.receiverRef());
      }
      if (answer.verdict() == Reconciliation.Verdict.UNKNOWN) {
        return Decider.park(
            c,
            "lease_expired",
            "the previous claim's lease expired while its attempt may have run, and the receiver"
                + " could not tell whether it accepted the work");
      }
    }
    Handler handler = handlers.get(c.kind());
    Outcome outcome = null;
    Throwable error = null;
    events.started(c);
    long t0 = System.nanoTime();
    try {
      outcome = handler.handle(c);
      if (outcome == null) {
        error = new IllegalStateException("the handler returned null instead of an Outcome");
      }
    } catch (Exception | LinkageError | AssertionError | StackOverflowError e) {
      error = e;
    } finally {
      c.unbindThread();
      Thread.interrupted();
    }
    events.finished(c, outcome, error, Duration.ofNanos(System.nanoTime() - t0));
    if (error == null) {
      if (Decider.isUnknownEffectRetry(c, outcome)) {
        Reconciliation answer = null;
        if (policy instanceof UnknownOutcomePolicy.Reconcile r && !c.isCancelRequested()) {
          answer = reconcile(r, c);
        }
        return Decider.forUnknownEffectRetry(c, (Outcome.Retry) outcome, answer);
      }
      return Decider.forOutcome(c, outcome);
    }
    if (c.timedOut) {
      log.info("{} timed out: {}", c, Decider.describe(error));
    } else {
      log.info("{} threw (effect unknown): {}", c, Decider.describe(error));
      log.debug("{} handler error", c, error);
    }
    Reconciliation answer = null;
    if (policy instanceof UnknownOutcomePolicy.Reconcile r && !c.isCancelRequested()) {
      answer = reconcile(r, c);
    }
    return Decider.forUnknown(c, error, c.timedOut, answer);
  }

  private Reconciliation reconcile(UnknownOutcomePolicy.Reconcile policy, LiveClaim c) {
    try {
      Reconciliation r = policy.reconciler().check(c);
      return r == null ? Reconciliation.unknown() : r;
    } catch (Exception e) {
      log.warn("the reconciler for {} failed; treating the answer as unknown: {}", c, e.toString());
      return Reconciliation.unknown();
    }
  }

  /** Releases an unstarted claim (guarded), through the completer or, once it stopped, directly. */
  void release(LiveClaim c) {
    Settlement s = new Settlement.Release(c.ref);
    if (completer.submit(c, s)) {
      return;
    }
    try (Connection conn = connection("release")) {
      boolean applied = store.release(conn, workerId, List.of(c.ref)).get(0).applied();
      if (applied) {
        events.released(c);
      }
    } catch (RelayException | SQLException e) {
      log.warn("releasing {} failed; it is left to its lease: {}", c, e.toString());
    } finally {
      ended(c);
    }
  }

  /** Outcomes handed to the completer and not yet recorded (they hold no claim capacity). */
  int recording() {
    return completer.pending();
  }

  /** The claim needs nothing more from this worker. */
  void ended(LiveClaim c) {
    if (c.phase.getAndSet(LiveClaim.Phase.ENDED) != LiveClaim.Phase.ENDED) {
      live.remove(c.ref, c);
      inFlight.decrementAndGet();
      claimer.nudge();
    }
  }

  /**
   * A connection from the data source for one of Relay's short transactions, tracked while in use
   * so {@link #close()} can abort it. After {@code close()} there are none.
   */
  Connection connection(String what) {
    return tracked(
        what,
        () -> {
          try {
            return dataSource.getConnection();
          } catch (SQLException e) {
            throw SqlErrors.translate("getting a connection to " + what, e);
          }
        });
  }

  /** The dedicated LISTEN connection, tracked like the others. */
  private Connection listenConnection(ConnectionFactory factory) throws SQLException {
    try {
      return tracked(
          "listen",
          () -> {
            try {
              return factory.open();
            } catch (SQLException e) {
              throw SqlErrors.translate("opening the LISTEN connection", e);
            }
          });
    } catch (RelayException e) {
      throw new SQLException(e.getMessage(), e.sqlState(), e);
    }
  }

  private Connection tracked(String what, Supplier<Connection> open) {
    if (connectionsClosed) {
      throw new RelayException("relay is closed: no connection for " + what);
    }
    Connection raw = open.get();
    Connection wrapped =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  switch (method.getName()) {
                    case "close" -> inUse.remove(proxy);
                    case "equals" -> {
                      return proxy == args[0];
                    }
                    case "hashCode" -> {
                      return System.identityHashCode(proxy);
                    }
                    default -> {}
                  }
                  try {
                    return method.invoke(raw, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    inUse.add(wrapped);
    if (connectionsClosed) {
      // close() ran while this one was being opened: it must not be used.
      inUse.remove(wrapped);
      abort(raw);
      throw new RelayException("relay is closed: no connection for " + what);
    }
    return wrapped;
  }

  /**
   * The timeouts for lease renewals: each no longer than the renew interval, so a renewal that
   * cannot finish in time fails and is tried again instead of outliving the lease it keeps.
   */
  static Timeouts renewalTimeouts(Timeouts base, RelayConfig config) {
    Duration cap = config.renewInterval();
    return new Timeouts(
        min(base.statement(), cap), min(base.lock(), cap), min(base.idleInTransaction(), cap));
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  private Thread thread(String prefix, Runnable body) {
    Thread t = new Thread(body, prefix + workerId);
    t.setDaemon(true);
    t.start();
    threads.add(t);
    return t;
  }

  private ThreadFactory threads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + workerId + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** Waits for {@code t} to end, until {@code deadline} (nanoTime) at the latest. */
  private static void join(Thread t, long deadline) {
    if (t == null) {
      return;
    }
    try {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(t, left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      log.warn(
          "{} did not stop within the shutdown bound; its connection is aborted and it is left"
              + " (a daemon thread)",
          t.getName());
    }
  }
}
