package dev.relay.internal.runtime;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.KindPolicy;
import dev.relay.RelayConfig;
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
import java.util.function.Consumer;
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
   * How often the claimer re-reads which of its kinds have a limiter row. Until it knows of a new
   * limit, its ordinary claim skips that kind (never exceeds the limit); the kind is then claimed
   * under the limiter's lock.
   */
  static final long LIMITS_REFRESH_NANOS = TimeUnit.SECONDS.toNanos(5);

  private static final Duration ERROR_PAUSE_BASE = Duration.ofMillis(100);
  private static final Duration ERROR_PAUSE_CAP = Duration.ofSeconds(30);

  private final RelayConfig config;
  private final String workerId;
  private final WorkStore store;
  private final TrackedConnections connections;
  private final Events events;
  private final LiveClaims live;
  private final Consumer<LiveClaim> buffer;
  private final Releaser releaser;
  private final Completions completions;
  private final RunTimeAverage runTime;
  private final ClaimSizing sizing;
  private final WakeSignal wake;
  private final TimeSource time;
  private final List<String> kinds;
  private final ClaimScans scans = new ClaimScans(); // claimer thread only
  private boolean limited; // claimer thread only: some kinds had a limiter row when last read
  private long limitsReadAt; // claimer thread only
  private boolean limitsRead; // claimer thread only
  private volatile long claimNanos; // a claim's round trip, a moving average
  private volatile boolean running = true;

  /**
   * @param buffer takes claimed items to be started (the dispatcher's buffer)
   * @param wake the claimer's wake-up: requested by a notification, signalled when capacity frees
   * @param perSlot the most claims one handler slot runs at once (the largest batch size, or 1)
   */
  Claimer(
      RelayConfig config,
      WorkStore store,
      TrackedConnections connections,
      Events events,
      LiveClaims live,
      Consumer<LiveClaim> buffer,
      Releaser releaser,
      Completions completions,
      RunTimeAverage runTime,
      WakeSignal wake,
      TimeSource time,
      int perSlot) {
    this.config = config;
    this.workerId = config.workerId();
    this.store = store;
    this.connections = connections;
    this.events = events;
    this.live = live;
    this.buffer = buffer;
    this.releaser = releaser;
    this.completions = completions;
    this.runTime = runTime;
    this.sizing = new ClaimSizing(config, perSlot);
    this.wake = wake;
    this.time = time;
    this.kinds = List.copyOf(config.kinds().keySet());
  }

  void stop() {
    running = false;
    wake.signal();
  }

  private int wantedBuffer() {
    return sizing.wantedBuffer(runTime.nanos(), claimNanos);
  }

  private int free() {
    return sizing.free(live.size(), completions.pending(), runTime.nanos(), claimNanos);
  }

  @Override
  public void run() {
    long nextPoll = time.nanoTime();
    boolean backlog = false;
    int failures = 0;
    long previous = wake.mark();
    while (running) {
      long seen = wake.mark();
      // A worker of limited kinds looks again when something of its own ended (a signal): a place
      // it held may be free for the whole limit, which a short claim would otherwise only find at
      // the next poll.
      boolean freed = limited && seen != previous;
      previous = seen;
      boolean requested = wake.requested();
      long now = time.nanoTime();
      boolean pollDue = now - nextPoll >= 0;
      boolean wanted = failures == 0 ? requested || pollDue || backlog || freed : pollDue;
      int n = wanted ? sizing.claimSize(free(), wantedBuffer(), backlog, requested || pollDue) : 0;
      if (n > 0) {
        wake.clearRequest();
        int got = claimOnce(n);
        if (got < 0) {
          failures++;
          backlog = false;
          nextPoll = time.nanoTime() + errorPause(failures);
        } else {
          failures = 0;
          backlog = got >= n;
          nextPoll = time.nanoTime() + jittered();
        }
        continue;
      }
      // Not wanted yet: sleep until the poll is due. Wanted but no room: sleep until a slot frees
      // (a signal), bounded by the poll interval.
      long waitUntil = wanted ? now + config.pollInterval().toNanos() : nextPoll;
      if (!running) {
        break;
      }
      try {
        wake.await(seen, waitUntil - time.nanoTime());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** One claim transaction; returns the rows it took or ended, or -1 on failure. */
  private int claimOnce(int n) {
    long sent = time.nanoTime();
    ClaimPosition after = scans.resumeAt(sent);
    ClaimBatch batch;
    try (Connection c = connections.open("claim")) {
      if (!limitsRead || sent - limitsReadAt >= LIMITS_REFRESH_NANOS) {
        limited = !store.limitedKinds(c, kinds).isEmpty();
        limitsRead = true;
        limitsReadAt = sent;
      }
      batch =
          store.claim(
              c,
              new ClaimRequest(workerId, config.queues(), kinds, n, config.lease(), after),
              limited);
    } catch (UncertainClaimException e) {
      scans.reset(); // the next claim is a full scan
      log.warn("the connection was lost while committing a claim; re-reading the claimed rows");
      events.error("claim", e.getCause()); // the public CommitOutcomeUnknownException
      return recover(e.attempted(), sent) ? 0 : -1;
    } catch (CommitOutcomeUnknownException e) {
      scans.reset(); // the next claim is a full scan
      // The claim statement returned nothing before the connection went: nothing to adopt.
      events.error("claim", e);
      return -1;
    } catch (RelayException | SQLException e) {
      log.warn("claiming failed; retrying with backoff: {}", e.toString());
      scans.reset(); // the next claim is a full scan
      events.error("claim", e);
      return -1;
    }
    long took = time.nanoTime() - sent;
    claimNanos = claimNanos == 0 ? took : claimNanos + (took - claimNanos) / 8;
    for (RetiredWork r : batch.retired()) {
      log.info("{} ended by the claim: {} ({})", r.workId(), r.state(), r.reason());
      events.retired(r.workId(), r.kind(), r.queue(), r.state(), r.reason());
    }
    accept(batch.claimed(), sent);
    int got = batch.claimed().size() + batch.retired().size();
    scans.claimed(after, sent, took, got >= n, batch.last());
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
    try (Connection c = connections.open("re-read claimed rows")) {
      Map<String, WorkStore.StoredState> rows =
          store.readStates(c, attempted.claimed().stream().map(ClaimedWork::ref).toList());
      List<ClaimedWork> held = new ArrayList<>();
      for (ClaimedWork w : attempted.claimed()) {
        WorkStore.StoredState row = rows.get(w.workId());
        if (row != null && row.heldBy(workerId, w.ref()) && !live.contains(w.ref())) {
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
      KindPolicy policy = config.kinds().get(w.kind());
      LiveClaim c = new LiveClaim(w, policy, workerId, config.lease(), sent, time);
      live.add(c);
      events.claimed(c);
      if (w.reclaimed()) {
        log.info(
            "{} taken over from {}, whose lease expired (that attempt's effect is unknown)",
            c,
            w.previousOwner());
        events.reclaimed(c, w.previousOwner());
      }
      if (!running && releaser.releaseIfBuffered(c)) {
        continue; // closing: handed straight back
      }
      buffer.accept(c);
    }
  }

  private long jittered() {
    long interval = config.pollInterval().toNanos();
    double cut = config.pollJitter() * ThreadLocalRandom.current().nextDouble();
    return (long) (interval * (1.0 - cut));
  }

  private static long errorPause(int failures) {
    return Backoff.pause(ERROR_PAUSE_BASE, ERROR_PAUSE_CAP, failures).toNanos();
  }
}
