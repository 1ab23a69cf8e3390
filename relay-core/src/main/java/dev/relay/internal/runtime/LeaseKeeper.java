package dev.relay.internal.runtime;

import dev.relay.Claim.StopReason;
import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayException;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WriteResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this worker's claims honest, on local monotonic time:
 *
 * <ul>
 *   <li>renews every running claim in <b>one</b> guarded transaction per tick, each named by ID and
 *       generation; a tick happens when the oldest renewal is {@code renewInterval} old;
 *   <li>marks a claim whose renewal was refused stale and signals its handler ({@code LEASE_LOST});
 *       the same when its lease lapsed locally because renewals kept failing;
 *   <li>passes a cancel request seen at renewal to the handler ({@code CANCEL_REQUESTED});
 *   <li>interrupts a handler past its kind's timeout and stops renewing its claim, so that another
 *       worker can take the work once the lease ends (the slot stays busy until it returns);
 *   <li>releases buffered claims that can no longer start before the start margin of their lease.
 * </ul>
 */
final class LeaseKeeper implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

  private final Engine engine;
  private final Object lock = new Object();
  private final long renewNanos;
  private final long marginNanos;
  private long signals; // guarded by lock
  private volatile boolean running = true;

  LeaseKeeper(Engine engine) {
    this.engine = engine;
    this.renewNanos = engine.config.renewInterval().toNanos();
    this.marginNanos = engine.config.startMargin().toNanos();
  }

  /** Re-plans now (a handler started, or the runtime is stopping). */
  void wake() {
    synchronized (lock) {
      signals++;
      lock.notifyAll();
    }
  }

  void stop() {
    running = false;
    wake();
  }

  @Override
  public void run() {
    long retryAt = 0;
    while (running) {
      long seen;
      synchronized (lock) {
        seen = signals;
      }
      long next;
      try {
        next = tick(retryAt);
      } catch (RuntimeException e) {
        log.error("lease keeper tick failed; continuing", e);
        next = System.nanoTime() + Math.min(renewNanos, TimeUnit.SECONDS.toNanos(1));
      }
      if (next == Long.MIN_VALUE) {
        // A renewal failed: try again soon, but not in a hot loop.
        retryAt = System.nanoTime() + Math.min(renewNanos / 4, TimeUnit.SECONDS.toNanos(1));
        continue;
      }
      synchronized (lock) {
        long wait = next - System.nanoTime();
        if (running && signals == seen && wait > 0) {
          try {
            TimeUnit.NANOSECONDS.timedWait(lock, wait);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    }
  }

  /**
   * One pass over the live claims. Returns when to look again, or {@code Long.MIN_VALUE} when a
   * renewal was due and failed.
   */
  private long tick(long retryAt) {
    long now = System.nanoTime();
    long next = now + renewNanos;
    List<LiveClaim> renewable = new ArrayList<>();
    boolean due = false;
    for (LiveClaim c : engine.live.values()) {
      LiveClaim.Phase p = c.phase.get();
      if (p == LiveClaim.Phase.BUFFERED) {
        long releaseAt = c.localLeaseDeadline() - marginNanos;
        if (now - releaseAt >= 0) {
          if (c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RELEASING)) {
            log.debug("{} waited too long in the buffer; released for other workers", c);
            engine.release(c);
          }
        } else {
          next = Math.min(next, releaseAt);
        }
        continue;
      }
      if (p != LiveClaim.Phase.RUNNING || c.timedOut || c.stale) {
        continue;
      }
      long timeoutAt = c.startedNanos + c.policy.handlerTimeout().toNanos();
      if (now - timeoutAt >= 0) {
        c.timedOut = true;
        log.warn(
            "{} passed its handler timeout of {}: interrupting it; its lease is no longer renewed",
            c,
            c.policy.handlerTimeout());
        c.signal(StopReason.TIMED_OUT);
        c.interrupt();
        engine.events.timedOut(c);
        continue;
      }
      next = Math.min(next, timeoutAt);
      if (now - c.localLeaseDeadline() >= 0) {
        c.stale = true;
        log.warn(
            "the lease of {} lapsed before it could be renewed; its outcome will be refused", c);
        c.signal(StopReason.LEASE_LOST);
        continue;
      }
      renewable.add(c);
      long dueAt = c.leaseBaseNanos() + renewNanos;
      if (now - dueAt >= 0) {
        due = true;
      } else {
        next = Math.min(next, dueAt);
      }
    }
    if (due && now - retryAt >= 0) {
      return renew(renewable) ? System.nanoTime() : Long.MIN_VALUE;
    }
    if (due) {
      next = Math.min(next, retryAt);
    }
    return next;
  }

  /** Renews every claim in {@code claims} in one guarded transaction. */
  private boolean renew(List<LiveClaim> claims) {
    // One write per work ID: if two generations of one work are live here, the newer one counts.
    Map<String, LiveClaim> byId = new HashMap<>();
    for (LiveClaim c : claims) {
      byId.merge(c.workId(), c, (a, b) -> a.generation() >= b.generation() ? a : b);
    }
    List<ClaimRef> refs = byId.values().stream().map(c -> c.ref).toList();
    long sent = System.nanoTime();
    List<WriteResult> results;
    try (Connection conn = engine.connection("renew leases")) {
      results = engine.store.renew(conn, engine.workerId, refs, engine.config.lease());
    } catch (CommitOutcomeUnknownException e) {
      // The leases are at least as long as before; keep the old local deadlines (the safe side).
      log.warn("the connection was lost while committing a renewal of {} claims", refs.size());
      engine.events.error("renew leases", e);
      return false;
    } catch (RelayException | SQLException e) {
      log.warn("renewing {} leases failed; retrying: {}", refs.size(), e.toString());
      engine.events.error("renew leases", e);
      return false;
    }
    for (WriteResult r : results) {
      LiveClaim c = byId.get(r.ref().workId());
      if (r.applied()) {
        c.renewed(r.leaseUntil(), sent);
        if (r.cancelRequested() && !c.isCancelRequested()) {
          log.info("{}: cancel requested; telling its handler", c);
          c.markCancelRequested();
          engine.events.cancelRequested(c);
        }
      } else {
        c.stale = true;
        engine.staleWrites.incrementAndGet();
        log.debug("renewal of {} refused: the claim is stale; telling its handler to stop", c);
        c.signal(StopReason.LEASE_LOST);
        engine.events.stale(c, "renew");
      }
    }
    return true;
  }

  /** The release write of a buffered claim; used by {@link Engine#release}. */
  static Settlement release(LiveClaim c) {
    return new Settlement.Release(c.ref);
  }
}
