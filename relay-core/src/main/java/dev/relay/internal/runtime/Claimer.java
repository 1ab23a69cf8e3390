package dev.relay.internal.runtime;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.KindPolicy;
import dev.relay.RelayException;
import dev.relay.internal.store.ClaimBatch;
import dev.relay.internal.store.ClaimPosition;
import dev.relay.internal.store.ClaimRequest;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.RetiredWork;
import dev.relay.internal.store.UncertainClaimException;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims work of this worker's kinds into the local buffer, never more than the free capacity
 * (handler slots plus buffer). It claims when a poll is due (the poll interval, shortened by a
 * random jitter so that workers do not poll in step), when woken by a notification, and at once
 * again while claims come back full (a backlog). A claim whose COMMIT was cut off is not guessed
 * at: this worker's live claims are re-read from the stored rows before anything runs.
 */
final class Claimer implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(Claimer.class);

  /**
   * In a backlog, each claim resumes where the previous one stopped instead of reading the claim
   * index from its start, where the entries of every row already taken lie until vacuum removes
   * them (and a long-open transaction elsewhere can keep vacuum from removing any). A row that
   * becomes eligible behind that position (higher priority, an expired lease, the next item of an
   * ordering key) is found by a scan from the start: after any short claim, and at least this
   * often.
   */
  static final long FULL_SCAN_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

  private static final Duration ERROR_PAUSE_BASE = Duration.ofMillis(100);
  private static final Duration ERROR_PAUSE_CAP = Duration.ofSeconds(30);

  private final Engine engine;
  private final Object lock = new Object();
  private final List<String> kinds;
  private long signals; // guarded by lock
  private ClaimPosition resumeAfter; // claimer thread only
  private long lastFullScan; // claimer thread only
  private boolean wakeRequested; // guarded by lock
  private volatile long claimNanos; // a claim's round trip, a moving average
  private volatile boolean running = true;

  Claimer(Engine engine) {
    this.engine = engine;
    this.kinds = List.copyOf(engine.config.kinds().keySet());
  }

  /** Claim now (a notification arrived, or the listener reconnected). */
  void wake() {
    synchronized (lock) {
      wakeRequested = true;
      signals++;
      lock.notifyAll();
    }
  }

  /** Capacity changed: look again. */
  void nudge() {
    synchronized (lock) {
      signals++;
      lock.notifyAll();
    }
  }

  void stop() {
    running = false;
    nudge();
  }

  boolean running() {
    return running;
  }

  /**
   * How many claimed, unstarted items are worth holding now: enough to keep the handler slots busy
   * while the next claim is on its way (twice the claims' round trip, at the rate the slots start
   * work), at least as many as there are slots, at most {@code bufferSize}, and never more than can
   * start within the lease ({@link #startable()}). Fast handlers in a backlog get a deep buffer and
   * large claims; slow handlers hold little that other workers could run.
   */
  int wantedBuffer() {
    int ceiling = engine.config.bufferSize();
    int slots = engine.config.concurrency();
    int floor = Math.min(slots, ceiling);
    long run = engine.runNanos.get();
    long rtt = claimNanos;
    int wanted;
    if (run <= 0 || rtt <= 0) {
      wanted = floor; // nothing measured yet
    } else {
      double perRoundTrip = (double) slots * 2 * rtt / run;
      wanted = (int) Math.max(floor, Math.min(ceiling, perRoundTrip));
    }
    return Math.max(0, Math.min(wanted, startable() - slots));
  }

  /**
   * Room for new claims. Only claims waiting to start or running hold capacity (handler slots plus
   * the {@linkplain #wantedBuffer() buffer}): an outcome handed to the completer frees its place at
   * once, so claiming overlaps the recording of outcomes. Outcomes waiting to be recorded are
   * bounded separately, by two completion batches (one being written, the next accumulating): past
   * that, claiming waits for the completer, so memory stays bounded however slow the database is to
   * record.
   */
  int free() {
    int slots = engine.config.concurrency();
    int live = engine.inFlight.get();
    int recording = engine.recording();
    int maxRecording = 2 * engine.config.completionBatchSize();
    int held = live - recording; // buffered or running
    return Math.min(
        slots + wantedBuffer() - held, slots + engine.config.bufferSize() + maxRecording - live);
  }

  /**
   * How many claims can be held (running or waiting) and still start within their lease: a claim
   * that cannot start before its lease's start margin is released unrun, so claiming it only keeps
   * it from other workers. With {@code c} handler slots and handlers taking {@code d} on average,
   * about {@code c × (lease − start margin) / d} claims start in that time. Unbounded until a
   * handler has returned.
   */
  int startable() {
    long d = engine.runNanos.get();
    if (d <= 0) {
      return Integer.MAX_VALUE;
    }
    long window = engine.config.lease().minus(engine.config.startMargin()).toNanos();
    long n = engine.config.concurrency() * (window / d);
    return (int) Math.max(engine.config.concurrency(), Math.min(Integer.MAX_VALUE, n));
  }

  @Override
  public void run() {
    int batchSize = engine.config.batchSize();
    long nextPoll = System.nanoTime();
    boolean backlog = false;
    int failures = 0;
    while (running) {
      long seen;
      boolean requested;
      synchronized (lock) {
        seen = signals;
        requested = wakeRequested;
      }
      long now = System.nanoTime();
      boolean pollDue = now - nextPoll >= 0;
      int free = free();
      int capacity = engine.config.concurrency() + wantedBuffer();
      // In a backlog, wait until a useful batch fits rather than claim one row per freed slot.
      int minFree =
          backlog && !requested && !pollDue ? Math.max(1, Math.min(batchSize, capacity) / 2) : 1;
      boolean wanted = failures == 0 ? requested || pollDue || backlog : pollDue;
      if (wanted && free >= minFree) {
        synchronized (lock) {
          wakeRequested = false;
        }
        int n = Math.min(batchSize, free);
        int got = claimOnce(n);
        if (got < 0) {
          failures++;
          backlog = false;
          nextPoll = System.nanoTime() + errorPause(failures);
        } else {
          failures = 0;
          backlog = got >= n;
          nextPoll = System.nanoTime() + jittered();
        }
        continue;
      }
      // Not wanted yet: sleep until the poll is due. Wanted but no room: sleep until a slot frees
      // (a nudge), bounded by the poll interval.
      long waitUntil = wanted ? now + engine.config.pollInterval().toNanos() : nextPoll;
      synchronized (lock) {
        if (!running || signals != seen) {
          continue;
        }
        long wait = waitUntil - System.nanoTime();
        if (wait > 0) {
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

  /** One claim transaction; returns the rows it took or ended, or -1 on failure. */
  private int claimOnce(int n) {
    long sent = System.nanoTime();
    ClaimPosition after =
        resumeAfter != null && sent - lastFullScan < FULL_SCAN_EVERY_NANOS ? resumeAfter : null;
    resumeAfter = null; // kept only after a full batch, below
    ClaimBatch batch;
    try (Connection c = engine.connection("claim")) {
      batch =
          engine.store.claim(
              c,
              new ClaimRequest(
                  engine.workerId, engine.config.queues(), kinds, n, engine.config.lease(), after));
    } catch (UncertainClaimException e) {
      log.warn("the connection was lost while committing a claim; re-reading the claimed rows");
      engine.events.error("claim", e.getCause()); // the public CommitOutcomeUnknownException
      return recover(e.attempted(), sent) ? 0 : -1;
    } catch (CommitOutcomeUnknownException e) {
      // The claim statement returned nothing before the connection went: nothing to adopt.
      engine.events.error("claim", e);
      return -1;
    } catch (RelayException | SQLException e) {
      log.warn("claiming failed; retrying with backoff: {}", e.toString());
      engine.events.error("claim", e);
      return -1;
    }
    long took = System.nanoTime() - sent;
    claimNanos = claimNanos == 0 ? took : claimNanos + (took - claimNanos) / 8;
    for (RetiredWork r : batch.retired()) {
      log.info("{} ended by the claim: {} ({})", r.workId(), r.state(), r.reason());
      engine.events.retired(r.workId(), r.kind(), r.queue(), r.state(), r.reason());
    }
    accept(batch.claimed(), sent);
    int got = batch.claimed().size() + batch.retired().size();
    if (after == null) {
      lastFullScan = sent;
    }
    if (got >= n && engine.config.queues().size() == 1) {
      resumeAfter = batch.last();
    }
    return got;
  }

  /**
   * Takes over what the uncertain claim gave this worker, as the stored rows say: only the rows
   * that claim statement returned, and only those still running under this worker at that
   * generation. Adopting every running row under the worker's name would also take claims a
   * previous process with the same worker ID left behind, and run them again under the same
   * generation.
   */
  private boolean recover(ClaimBatch attempted, long sent) {
    if (attempted.claimed().isEmpty()) {
      return true;
    }
    try (Connection c = engine.connection("re-read claimed rows")) {
      Map<String, WorkStore.StoredState> rows =
          engine.store.readStates(c, attempted.claimed().stream().map(ClaimedWork::ref).toList());
      List<ClaimedWork> held = new ArrayList<>();
      for (ClaimedWork w : attempted.claimed()) {
        WorkStore.StoredState row = rows.get(w.workId());
        if (row != null
            && row.heldBy(engine.workerId, w.ref())
            && !engine.live.containsKey(w.ref())) {
          held.add(w);
        }
      }
      log.info(
          "the uncertain claim committed {} of its {} claims; taking those over",
          held.size(),
          attempted.claimed().size());
      accept(held, sent);
      return true;
    } catch (RelayException | SQLException e) {
      // Anything the claim took stays unusable until its lease expires; then it is reclaimed.
      log.warn("re-reading claimed rows failed: {}", e.toString());
      return false;
    }
  }

  private void accept(List<ClaimedWork> claimed, long sent) {
    for (ClaimedWork w : claimed) {
      KindPolicy policy = engine.config.kinds().get(w.kind());
      LiveClaim c = new LiveClaim(w, policy, engine.workerId, engine.config.lease(), sent);
      engine.live.put(c.ref, c);
      engine.inFlight.incrementAndGet();
      engine.events.claimed(c);
      if (w.reclaimed()) {
        log.info(
            "{} taken over from {}, whose lease expired (that attempt's effect is unknown)",
            c,
            w.previousOwner());
        engine.events.reclaimed(c, w.previousOwner());
      }
      if (!running && c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RELEASING)) {
        engine.release(c); // closing: hand it straight back
      } else {
        engine.buffer.add(c);
      }
    }
  }

  private long jittered() {
    long interval = engine.config.pollInterval().toNanos();
    double cut = engine.config.pollJitter() * ThreadLocalRandom.current().nextDouble();
    return (long) (interval * (1.0 - cut));
  }

  private static long errorPause(int failures) {
    return Backoff.pause(ERROR_PAUSE_BASE, ERROR_PAUSE_CAP, failures).toNanos();
  }
}
