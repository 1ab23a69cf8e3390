package dev.relay.internal.runtime;

import dev.relay.Claim.StopReason;
import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayConfig;
import dev.relay.RelayException;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.WorkStore;
import dev.relay.internal.store.WriteResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this worker's claims honest, on local monotonic time:
 *
 * <ul>
 *   <li>renews every claim it holds (handler running, or outcome waiting to be recorded) in
 *       <b>one</b> guarded transaction per tick, each named by ID and generation; a tick happens
 *       when the oldest renewal is {@code renewInterval} old. The renewal runs on its own thread
 *       ({@code relay-renewer-}) with server-side timeouts no longer than the renew interval and a
 *       client-side network timeout, so a renewal that hangs (a worker cut off from PostgreSQL)
 *       never delays the checks below;
 *   <li>marks a claim whose renewal was refused stale and signals its handler ({@code LEASE_LOST});
 *       the same, at that very moment, when a full lease has passed on the monotonic clock since
 *       the last renewal that succeeded was sent (a worker cut off from PostgreSQL never hears a
 *       refusal). The local lease is counted from the moment the renewal was <em>sent</em>, before
 *       the database set its new {@code lease_until}, so it never ends later than the stored one;
 *   <li>passes a cancel request seen at renewal to the handler ({@code CANCEL_REQUESTED});
 *   <li>interrupts a handler past its kind's {@code maxRunTime} and stops renewing its claim, so
 *       that another worker can take the work once the lease ends (the slot stays busy until it
 *       returns);
 *   <li>releases buffered claims that can no longer start before the start margin of their lease.
 * </ul>
 */
final class LeaseKeeper implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

  private final String workerId;
  private final Duration lease;
  private final WorkStore renewStore;
  private final TrackedConnections connections;
  private final Events events;
  private final LiveClaims live;
  private final Releaser releaser;
  private final TimeSource time;
  private final AtomicLong staleWrites;
  private final WakeSignal wake = new WakeSignal();
  private final long renewNanos;
  private final long marginNanos;
  private final int networkMillis;
  private final ExecutorService renewer;
  private final AtomicBoolean renewing = new AtomicBoolean();
  private volatile long retryAt;
  private volatile boolean closing;
  private volatile boolean running = true;

  /**
   * @param renewStore the store whose statement, lock and idle timeouts are no longer than the
   *     renew interval
   * @param releaser hands back buffered claims that can no longer start within their lease
   * @param staleWrites counts renewals refused because the claim was no longer current
   */
  LeaseKeeper(
      RelayConfig config,
      WorkStore renewStore,
      TrackedConnections connections,
      Events events,
      LiveClaims live,
      Releaser releaser,
      TimeSource time,
      AtomicLong staleWrites) {
    this.workerId = config.workerId();
    this.lease = config.lease();
    this.renewStore = renewStore;
    this.connections = connections;
    this.events = events;
    this.live = live;
    this.releaser = releaser;
    this.time = time;
    this.staleWrites = staleWrites;
    this.renewNanos = config.renewInterval().toNanos();
    this.marginNanos = config.startMargin().toNanos();
    this.networkMillis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, renewNanos / 1_000_000));
    this.retryAt = time.nanoTime();
    this.renewer =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "relay-renewer-" + workerId);
              t.setDaemon(true);
              return t;
            });
  }

  /** Re-plans now (a renewal ended, or the runtime is stopping). */
  void wake() {
    wake.signal();
  }

  /**
   * The attempt of {@code c} is about to start (its start time is set, its phase RUNNING). Re-plans
   * only when the plan may not cover what the start brings:
   *
   * <ul>
   *   <li>a max run time shorter than the renew interval. Every pass plans to look again within one
   *       renew interval, and a pass that begins after the start sees the claim RUNNING; so a
   *       longer max run time (the default is an hour) is always seen in time, at most the instant
   *       between setting the start time and the phase late;
   *   <li>a renewal already due (the claim waited in the buffer a whole renew interval). A renewal
   *       that falls due later is planned by the next pass; a pass that saw the claim buffered
   *       planned to look again by the claim's start margin at the latest, so its renewal is never
   *       later than that.
   * </ul>
   *
   * Waking on every start made the keeper pass over all live claims once per start, a large part of
   * the runtime's own CPU in a backlog (docs/performance.md).
   */
  void started(LiveClaim c) {
    if (c.policy.maxRunTime().toNanos() < renewNanos
        || c.startedNanos - (c.leaseBaseNanos() + renewNanos) >= 0) {
      wake.signal();
    }
  }

  /** How many times the keeper was asked to re-plan so far; for tests. */
  long wakeSignals() {
    return wake.mark();
  }

  /**
   * From now on renews only outcomes waiting to be recorded: the handlers still running when the
   * shutdown grace ended are left to their leases.
   */
  void closing() {
    closing = true;
    wake();
  }

  void stop() {
    running = false;
    renewer.shutdownNow();
    wake();
  }

  @Override
  public void run() {
    while (running) {
      long seen = wake.mark();
      long next;
      try {
        next = tick();
      } catch (RuntimeException e) {
        log.error("lease keeper tick failed; continuing", e);
        next = time.nanoTime() + Math.min(renewNanos, TimeUnit.SECONDS.toNanos(1));
      }
      if (!running) {
        return;
      }
      try {
        wake.await(seen, next - time.nanoTime());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /**
   * One pass over the live claims, at the time source's now. Returns when to look again (on the
   * time source's monotonic clock). Package-private so tests can drive it on a test clock.
   */
  long tick() {
    long now = time.nanoTime();
    long next = now + renewNanos;
    List<LiveClaim> renewable = new ArrayList<>();
    boolean due = false;
    for (LiveClaim c : live.snapshot()) {
      LiveClaim.Phase p = c.phase.get();
      if (p == LiveClaim.Phase.BUFFERED) {
        long releaseAt = c.localLeaseDeadline() - marginNanos;
        if (now - releaseAt >= 0) {
          if (releaser.releaseIfBuffered(c)) {
            log.debug("{} waited too long in the buffer; released for other workers", c);
          }
        } else {
          next = Math.min(next, releaseAt);
        }
        continue;
      }
      boolean runningHandler = p == LiveClaim.Phase.RUNNING;
      if (!(runningHandler || p == LiveClaim.Phase.FINISHING) || c.timedOut || c.stale) {
        continue;
      }
      if (runningHandler && closing) {
        continue; // left to its lease by close()
      }
      if (runningHandler) {
        long timeoutAt = c.startedNanos + c.policy.maxRunTime().toNanos();
        if (now - timeoutAt >= 0) {
          c.timedOut = true;
          log.warn(
              "{} passed its max run time of {}: interrupting it; its lease is no longer renewed",
              c,
              c.policy.maxRunTime());
          c.signal(StopReason.TIMED_OUT);
          c.interrupt();
          events.timedOut(c);
          continue;
        }
        next = Math.min(next, timeoutAt);
      }
      if (c.isRecording()) {
        continue; // its outcome is being written now; looked at again only if that write fails
      }
      long lostAt = c.localLeaseDeadline();
      if (now - lostAt >= 0) {
        log.warn(
            "{}: a full lease passed since the last renewal that succeeded; the claim is lost and"
                + " its outcome will be refused unless the lease is found still held",
            c);
        c.leaseLost();
        continue;
      }
      next = Math.min(next, lostAt); // wake exactly when the local lease ends
      renewable.add(c);
      long dueAt = c.leaseBaseNanos() + renewNanos;
      if (now - dueAt >= 0) {
        due = true;
      } else {
        next = Math.min(next, dueAt);
      }
    }
    if (due) {
      long retry = retryAt;
      if (now - retry < 0) {
        next = Math.min(next, retry);
      } else if (renewing.compareAndSet(false, true)) {
        List<LiveClaim> held = new ArrayList<>();
        for (LiveClaim c : renewable) {
          if (c.holdForRenewal()) {
            held.add(c); // not being recorded now; recording waits until this renewal ends
          }
        }
        if (held.isEmpty()) {
          renewing.set(false); // all of them began recording meanwhile
          return next;
        }
        try {
          renewer.execute(() -> renewInBackground(held));
        } catch (RejectedExecutionException e) {
          held.forEach(LiveClaim::renewalEnded);
          renewing.set(false); // stopping
        }
      }
      // While a renewal runs, its end wakes this thread.
    }
    return next;
  }

  private void renewInBackground(List<LiveClaim> claims) {
    boolean ok = false;
    try {
      ok = renew(claims);
    } catch (RuntimeException e) {
      log.error("renewing leases failed unexpectedly; retrying", e);
    } finally {
      claims.forEach(LiveClaim::renewalEnded);
      // A failed renewal is tried again soon, but not in a hot loop.
      retryAt =
          ok
              ? time.nanoTime()
              : time.nanoTime() + Math.min(renewNanos / 4, TimeUnit.SECONDS.toNanos(1));
      renewing.set(false);
      wake();
    }
  }

  /** Renews every claim in {@code claims} in one guarded transaction. */
  private boolean renew(List<LiveClaim> claims) {
    // One write per work ID: if two generations of one work are live here, the newer one counts.
    Map<String, LiveClaim> byId = new HashMap<>();
    for (LiveClaim c : claims) {
      byId.merge(c.workId(), c, (a, b) -> a.generation() >= b.generation() ? a : b);
    }
    List<ClaimRef> refs = byId.values().stream().map(c -> c.ref).toList();
    long sent = time.nanoTime();
    List<WriteResult> results;
    try (Connection conn = connections.open("renew leases")) {
      // A worker cut off from PostgreSQL gets no server-side timeout: bound the wait client-side
      // too (a connection that times out is broken, and the pool discards it).
      int before = conn.getNetworkTimeout();
      conn.setNetworkTimeout(Runnable::run, networkMillis);
      try {
        results = renewStore.renew(conn, workerId, refs, lease);
      } finally {
        restoreNetworkTimeout(conn, before);
      }
    } catch (CommitOutcomeUnknownException e) {
      // The leases are at least as long as before; keep the old local deadlines (the safe side).
      log.warn("the connection was lost while committing a renewal of {} claims", refs.size());
      events.error("renew leases", e);
      return false;
    } catch (RelayException | SQLException e) {
      log.warn("renewing {} leases failed; retrying: {}", refs.size(), e.toString());
      events.error("renew leases", e);
      return false;
    }
    for (WriteResult r : results) {
      LiveClaim c = byId.get(r.ref().workId());
      if (c.stale) {
        continue; // already given up locally; its handler was told
      }
      if (r.applied()) {
        c.renewed(r.leaseUntil(), sent);
        if (r.cancelRequested() && !c.isCancelRequested()) {
          log.info("{}: cancel requested; telling its handler", c);
          c.markCancelRequested();
          events.cancelRequested(c);
        }
      } else if (c.phase.get() == LiveClaim.Phase.FINISHING) {
        // Either its outcome was recorded a moment ago, or the claim is lost; in both cases it
        // needs no more renewal, and a lost claim's write is refused and counted by the completer.
        c.stale = true;
      } else {
        staleWrites.incrementAndGet();
        log.debug("renewal of {} refused: the claim is stale; telling its handler to stop", c);
        events.stale(c, "renew"); // reported before the handler hears of it
        c.leaseLost();
      }
    }
    return true;
  }

  private static void restoreNetworkTimeout(Connection conn, int millis) {
    try {
      if (!conn.isClosed()) {
        conn.setNetworkTimeout(Runnable::run, millis);
      }
    } catch (SQLException e) {
      log.debug("restoring the network timeout of a renewal connection failed", e);
    }
  }
}
