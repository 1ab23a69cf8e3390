package dev.relay.internal.runtime;

import dev.relay.AsyncHandler;
import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.ConnectionFactory;
import dev.relay.Handler;
import dev.relay.KindPolicy;
import dev.relay.Migrator;
import dev.relay.RelayConfig;
import dev.relay.RelayEventListener;
import dev.relay.RelayTracing;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.Deployment;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.WorkStore;
import dev.relay.internal.store.WorkerRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running parts of one {@link Relay}, wired: claimer, dispatcher, attempt runner, lease keeper,
 * completer and (optionally) notifier, each given the collaborators it uses ({@link LiveClaims},
 * {@link Completions}, {@link WakeSignal}, {@link TimeSource}, {@link TrackedConnections}) and
 * nothing else. This class starts their threads and runs {@link #close()}. Built and driven by
 * {@link dev.relay.Relay}; not for direct use.
 *
 * <p>Every connection the parts use comes through one {@link TrackedConnections}: when {@link
 * #close()} reaches its bound it aborts those still in use and hands out no more, so no Relay
 * thread can start a database write after {@code close()} returned.
 */
public final class Engine {
  private static final Logger log = LoggerFactory.getLogger(Engine.class);

  /**
   * How long {@link #close()} may take beyond the shutdown grace period to stop its threads and
   * record the outcomes already reported; then it aborts what is still in use and returns.
   */
  static final long CLOSE_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(1_000);

  /**
   * How long {@link #close()} waits, within {@link #CLOSE_SLACK_NANOS}, for the handlers it
   * interrupted after the grace period to return, so that their attempts are recorded (as a
   * shutdown) before the completer stops; the rest of the slack is the completer's.
   */
  static final long INTERRUPTED_RETURN_NANOS = CLOSE_SLACK_NANOS / 2;

  private final RelayConfig config;
  private final String workerId;
  private final WorkStore store;
  private final TimeSource time;
  private final TrackedConnections connections;
  private final LiveClaims live;
  private final AtomicLong staleWrites = new AtomicLong();
  private final ExecutorService ownedExecutor;
  private final Claimer claimer;
  private final Dispatcher dispatcher;
  private final LeaseKeeper keeper;
  private final Completer completer;
  private final Releaser releaser;
  private final Notifier notifier;
  private final Handoffs handoffs;
  private ScheduledExecutorService handoffSweeper;
  private final WorkerHeartbeat heartbeat;
  private Thread heartbeatThread;
  private final Events events;
  private Thread claimerThread;
  private Thread dispatcherThread;
  private Thread keeperThread;
  private final List<Thread> completerThreads = new ArrayList<>();
  private Thread notifierThread;

  /** Wires the parts; nothing runs until {@link #start()}. */
  public Engine(
      DataSource dataSource,
      RelayConfig config,
      Map<String, Handler> handlers,
      Executor executor,
      boolean virtualThreads,
      RelayEventListener listener,
      RelayTracing tracing,
      ConnectionFactory listenConnections,
      boolean handoff) {
    this.config = config;
    this.workerId = config.workerId();
    this.time = TimeSource.SYSTEM;
    SchemaName schema = SchemaName.of(config.schema());
    Timeouts timeouts =
        new Timeouts(
            config.statementTimeout(), config.lockTimeout(), config.idleInTransactionTimeout());
    this.store = new WorkStore(schema, timeouts);
    Events events = new Events(listener, tracing);
    this.events = events;
    this.connections = new TrackedConnections(dataSource);
    this.heartbeat =
        new WorkerHeartbeat(
            config,
            new WorkerRegistry(schema, renewalTimeouts(timeouts, config)),
            connections,
            events);
    WakeSignal claimerWake = new WakeSignal();
    this.live = new LiveClaims(claimerWake::signal);
    this.completer =
        new Completer(
            config,
            store,
            connections,
            events,
            time,
            live::ended,
            claimerWake::signal,
            staleWrites);
    this.releaser = new Releaser(completer, connections, store, workerId, events, live);
    RunTimeAverage runTime = new RunTimeAverage();
    // Renewals must fail fast rather than outlive the interval they keep: their own timeouts.
    this.keeper =
        new LeaseKeeper(
            config,
            new WorkStore(schema, renewalTimeouts(timeouts, config)),
            connections,
            events,
            live,
            releaser,
            time,
            staleWrites);
    Set<String> asyncKinds = new LinkedHashSet<>();
    handlers.forEach(
        (kind, handler) -> {
          if (handler instanceof AsyncHandler) {
            asyncKinds.add(kind);
          }
        });
    Executor handlerExecutor;
    if (executor == null) {
      this.ownedExecutor =
          virtualThreads
              ? VirtualThreads.perTaskExecutor("relay-handler-")
              : Executors.newFixedThreadPool(
                  handlerThreads(config.concurrency(), asyncKinds.size() == handlers.size()),
                  threads("relay-handler-"));
      handlerExecutor = ownedExecutor;
    } else {
      this.ownedExecutor = null;
      handlerExecutor = executor;
    }
    Map<String, Integer> batchSizes = new HashMap<>();
    handlers.forEach(
        (kind, handler) -> {
          if (handler instanceof BatchHandler batch) {
            batchSizes.put(kind, batch.maxBatchSize());
          }
        });
    this.dispatcher =
        new Dispatcher(
            config.concurrency(),
            batchSizes,
            asyncKinds,
            config.startMargin().toNanos(),
            handlerExecutor,
            new AttemptRunner(handlers, events, completer, live::ended, runTime, time, tracing),
            releaser,
            keeper::started,
            live,
            time);
    this.claimer =
        new Claimer(
            config,
            store,
            connections,
            events,
            live,
            dispatcher::add,
            releaser,
            completer,
            runTime,
            claimerWake,
            time,
            batchSizes.values().stream().mapToInt(Integer::intValue).max().orElse(1));
    Set<String> handoffKinds = new LinkedHashSet<>(handlers.keySet());
    handoffKinds.removeAll(batchSizes.keySet()); // a batch handler's claims start together
    this.handoffs =
        handoff
            ? new Handoffs(
                config,
                handoffKinds,
                dispatcher,
                live,
                releaser,
                events,
                time,
                // A released hand-off wakes the other workers whether or not this one listens.
                Coordination.channel(schema))
            : null;
    this.notifier =
        config.notifications()
            ? new Notifier(
                () -> connections.openListen(listenConnections),
                (channel, token) -> {
                  try (Connection c = connections.open("notification probe");
                      PreparedStatement ps = c.prepareStatement(Coordination.NOTIFY_PROBE)) {
                    ps.setString(1, channel);
                    ps.setString(2, token);
                    ps.execute();
                  }
                },
                Coordination.checkedChannel(schema, "schema"),
                events,
                claimerWake,
                time)
            : null;
  }

  /**
   * Checks that the schema is one this library may run against (its version or newer by expand-only
   * versions), registers this worker and the kinds' policies, then starts the threads.
   */
  public void start() {
    try (Connection c = connections.open("check the schema version")) {
      Migrator.forSchema(config.schema()).requireCompatible(c);
    } catch (SQLException e) {
      throw SqlErrors.translate("check the schema version", e);
    }
    boolean registered = heartbeat.register();
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
              p.unknownOutcome().storedName(),
              p.limits(),
              p.maxSnoozes()));
    }
    try (Connection c = connections.open("register kinds")) {
      store.registerKinds(c, workerId, rows);
      if (handoffs != null && !handoffs.kinds().isEmpty()) {
        store.registerHandoff(
            c, workerId, List.copyOf(handoffs.kinds()), config.queues(), config.lease());
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("register kinds", e);
    }
    warnIfFailoverUnsafe();
    if (registered) {
      heartbeatThread = thread("relay-heartbeat-", heartbeat);
    }
    if (handoffs != null) {
      long every = Math.max(10, Math.min(1_000, handoffs.reservationLimit().toMillis() / 4));
      handoffSweeper =
          Executors.newSingleThreadScheduledExecutor(threads("relay-handoff-sweeper-"));
      handoffSweeper.scheduleWithFixedDelay(handoffs::sweep, every, every, TimeUnit.MILLISECONDS);
    }
    for (int i = 1; i <= Completer.WRITERS; i++) {
      completerThreads.add(
          thread(i == 1 ? "relay-completer-" : "relay-completer-" + i + "-", completer));
    }
    keeperThread = thread("relay-lease-keeper-", keeper);
    dispatcherThread = thread("relay-dispatcher-", dispatcher);
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
   * Fencing assumes a commit that returned is never lost; an asynchronous standby promoted after
   * the primary died can lack the last ones. Only a warning: the operator may accept that risk, and
   * a check that cannot run (a restricted role) must not stop the workers.
   */
  private void warnIfFailoverUnsafe() {
    try (Connection c = connections.open("replication check")) {
      Deployment.failoverRisk(c)
          .ifPresent(
              reason -> {
                log.warn("relay worker {}: {}", workerId, reason);
                events.failoverUnsafe(reason);
              });
    } catch (SQLException | RuntimeException e) {
      log.debug("could not check the database's replication; not warning", e);
    }
  }

  /**
   * See {@link dev.relay.Relay#close()}. One deadline bounds the whole shutdown: the grace period
   * for running handlers, then {@link #CLOSE_SLACK_NANOS} more to record the outcomes already
   * reported and stop the threads. At that bound, connections still in use are aborted, and no
   * thread of this runtime gets another one: nothing is written after this returns.
   */
  public void close() {
    long graceNanos = config.shutdownGrace().toNanos();
    long graceEnd = time.nanoTime() + graceNanos;
    long hardEnd = graceEnd + CLOSE_SLACK_NANOS;
    log.info("relay worker {} closing", workerId);
    // 1. Stop taking work: no hand-off starts from now on (rows inserted claimed and not yet
    // started are left to their leases), and none is inserted claimed by this worker any more.
    if (handoffs != null) {
      handoffs.close();
      if (handoffSweeper != null) {
        handoffSweeper.shutdownNow();
      }
      try (Connection c = connections.open("unregister hand-off")) {
        store.unregisterHandoff(c, workerId);
      } catch (RuntimeException | SQLException e) {
        log.warn("could not remove the hand-off registration of {}: {}", workerId, e.toString());
      }
    }
    claimer.stop();
    if (notifier != null) {
      notifier.stop();
    }
    dispatcher.stop();
    if (dispatcherThread != null) {
      dispatcherThread.interrupt();
    }
    join(claimerThread, hardEnd);
    join(dispatcherThread, hardEnd);
    // 2. Hand back what never started, so another worker can take it at once.
    for (LiveClaim c : live.snapshot()) {
      releaser.releaseIfBuffered(c);
    }
    // 3. Let running handlers finish within the grace period (their leases are still renewed).
    dispatcher.awaitHandlers(graceEnd);
    // 4. Stop the handlers still running: renew their claims no more, tell them why
    // (StopReason.SHUTDOWN) and interrupt them. One that returns within a short wait has ended its
    // call, so its attempt is recorded in step 5 (error kind "shutdown", effect unknown, under the
    // kind's policy, a retry due at once). One that does not return may still have its call in
    // flight: its claim is never released, but left to its lease, after which another worker
    // takes it. Outcomes waiting to be recorded are still renewed until step 5 ends.
    keeper.closing();
    List<LiveClaim> stillRunning = new ArrayList<>();
    for (LiveClaim c : live.snapshot()) {
      if (c.phase.get() == LiveClaim.Phase.RUNNING) {
        log.warn(
            "{} still running after the shutdown grace period of {}: interrupting its handler",
            c,
            config.shutdownGrace());
        // A timed-out claim was stopped already, and is left to its lease.
        c.stoppedForShutdown = !c.timedOut;
        stillRunning.add(c);
      }
    }
    // Every claim is marked before any handler hears of it: a batch's claims share one handler,
    // which may end all of them when told of one.
    for (LiveClaim c : stillRunning) {
      if (c.stoppedForShutdown) {
        c.signal(Claim.StopReason.SHUTDOWN);
      }
    }
    stillRunning.forEach(LiveClaim::interrupt);
    if (!stillRunning.isEmpty()) {
      dispatcher.awaitHandlers(Math.min(hardEnd, time.nanoTime() + INTERRUPTED_RETURN_NANOS));
      for (LiveClaim c : live.snapshot()) {
        if (c.phase.get() == LiveClaim.Phase.RUNNING) {
          log.warn(
              "{} did not return when interrupted: the claim is left to its lease (until {}),"
                  + " after which another worker takes it; an outcome this handler returns after"
                  + " close() is not recorded",
              c,
              c.leaseUntil());
        }
      }
    }
    // 5. Record the outcomes already reported, within the bound.
    completer.finish();
    completerThreads.forEach(t -> join(t, hardEnd));
    completer.abandon();
    keeper.stop();
    join(keeperThread, hardEnd);
    join(notifierThread, hardEnd);
    // A clean shutdown: this worker no longer counts for relay migrate. The heartbeat thread
    // deletes the row as its last act, within the bound (a hanging database is cut off below).
    heartbeat.stop();
    join(heartbeatThread, hardEnd);
    // 6. The bound: whatever still talks to the database is cut off, and nothing talks again.
    connections.closeAll();
    if (ownedExecutor != null) {
      ownedExecutor.shutdownNow();
    }
    log.info(
        "relay worker {} closed in {} ms ({} claims left to their leases, {} stale writes refused)",
        workerId,
        TimeUnit.NANOSECONDS.toMillis(time.nanoTime() - (graceEnd - graceNanos)),
        live.size(),
        staleWrites.get());
  }

  /** The local hand-off of this runtime, or {@code null} when it is off. */
  public Handoffs handoffs() {
    return handoffs;
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

  /**
   * Threads of the worker's own handler pool: one per slot, or, when every handler is an {@link
   * AsyncHandler} (a thread only starts attempts and takes their outcomes), at most two per
   * processor.
   */
  static int handlerThreads(int concurrency, boolean allAsync) {
    if (!allAsync) {
      return concurrency;
    }
    return Math.min(concurrency, Math.max(2, 2 * Runtime.getRuntime().availableProcessors()));
  }

  private Thread thread(String prefix, Runnable body) {
    Thread t = new Thread(body, prefix + workerId);
    t.setDaemon(true);
    t.start();
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
  private void join(Thread t, long deadline) {
    if (t == null) {
      return;
    }
    try {
      long left = deadline - time.nanoTime();
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
