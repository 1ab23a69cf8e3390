package dev.relay.internal.runtime;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayException;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import dev.relay.internal.store.WriteResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records outcomes in batches: one transaction per batch (bounded by size and by how long the first
 * outcome waits), the guard checked per row by {@link dev.relay.internal.store.WorkStore#settle}. A
 * refused (stale) write is counted and reported, never retried. A failed batch that certainly
 * rolled back is repeated while the claims' leases last; a batch whose COMMIT was cut off is not
 * repeated blindly: the stored rows are re-read and only the claims this worker still holds are
 * written again.
 */
final class Completer implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(Completer.class);

  record Item(LiveClaim claim, Settlement settlement) {}

  private final Engine engine;
  private final LinkedBlockingQueue<Item> queue = new LinkedBlockingQueue<>();
  private final Deque<Item> carry = new ArrayDeque<>(); // owned by the completer thread
  private volatile boolean accepting = true;
  private volatile boolean running = true;
  private volatile boolean abandoned;

  Completer(Engine engine) {
    this.engine = engine;
  }

  /** Queues an outcome; {@code false} once the completer has stopped (the caller gives up). */
  boolean submit(LiveClaim claim, Settlement settlement) {
    if (!accepting) {
      return false;
    }
    queue.add(new Item(claim, settlement));
    return true;
  }

  /** Stops after recording what is queued. */
  void finish() {
    running = false;
  }

  /** Stops at once, dropping what is left (their leases will expire). */
  void abandon() {
    accepting = false;
    running = false;
    abandoned = true;
  }

  @Override
  public void run() {
    try {
      while (!abandoned && (running || !queue.isEmpty() || !carry.isEmpty())) {
        List<Item> batch = nextBatch();
        if (!batch.isEmpty()) {
          flush(batch);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      accepting = false;
      List<Item> left = new ArrayList<>(carry);
      queue.drainTo(left);
      for (Item i : left) {
        log.info(
            "relay closed before the outcome of {} was recorded; its lease will expire and another"
                + " worker will take it",
            i.claim());
        engine.ended(i.claim());
      }
    }
  }

  private List<Item> nextBatch() throws InterruptedException {
    List<Item> batch = new ArrayList<>();
    Item first = carry.isEmpty() ? queue.poll(100, TimeUnit.MILLISECONDS) : carry.poll();
    if (first == null) {
      return batch;
    }
    Set<String> ids = new HashSet<>();
    List<Item> deferred = new ArrayList<>();
    batch.add(first);
    ids.add(first.claim().workId());
    int max = engine.config.completionBatchSize();
    long deadline = System.nanoTime() + engine.config.completionMaxDelay().toNanos();
    while (batch.size() < max) {
      Item next = carry.poll();
      if (next == null) {
        long wait = deadline - System.nanoTime();
        next = wait > 0 ? queue.poll(wait, TimeUnit.NANOSECONDS) : queue.poll();
      }
      if (next == null) {
        break;
      }
      if (ids.add(next.claim().workId())) {
        batch.add(next);
      } else {
        deferred.add(next); // two generations of one work ID: one write per batch
      }
    }
    carry.addAll(deferred);
    return batch;
  }

  private void flush(List<Item> batch) throws InterruptedException {
    List<Item> pending = batch;
    boolean uncertain = false;
    int failures = 0;
    while (!pending.isEmpty() && !abandoned) {
      if (uncertain) {
        List<Item> unresolved = resolve(pending);
        if (unresolved == null) {
          pending = dropLapsed(pending);
          pause(++failures);
          continue;
        }
        uncertain = false;
        pending = unresolved;
        continue;
      }
      // Lifetime hook: no lease renewal of these claims runs while their outcomes are written.
      pending.forEach(i -> i.claim().recordingStarts());
      try (Connection c = engine.connection("record outcomes")) {
        List<WriteResult> results =
            engine.store.settle(
                c, engine.workerId, pending.stream().map(Item::settlement).toList());
        for (int i = 0; i < results.size(); i++) {
          report(pending.get(i), results.get(i).applied());
        }
        pending = List.of();
      } catch (CommitOutcomeUnknownException e) {
        log.warn(
            "the connection was lost while committing {} outcomes; re-reading the rows",
            pending.size());
        engine.events.error("record outcomes", e);
        uncertain = true;
      } catch (RelayException | SQLException e) {
        log.warn("recording {} outcomes failed; retrying: {}", pending.size(), e.toString());
        engine.events.error("record outcomes", e);
        pending.forEach(i -> i.claim().recordingFailed()); // rolled back: renew them meanwhile
        pending = dropLapsed(pending);
        pause(++failures);
      }
    }
  }

  /**
   * After a COMMIT whose outcome is unknown, the stored rows decide: a claim this worker still
   * holds (running, same generation, lease live) was not settled and is returned to be written
   * again; a row at the same generation in the state this settlement writes was settled by that
   * commit, and is reported as applied; anything else lost its lease meanwhile and needs nothing
   * more. Returns {@code null} if the rows cannot be read now.
   */
  private List<Item> resolve(List<Item> pending) {
    try (Connection c = engine.connection("re-read claims")) {
      Map<String, WorkStore.StoredState> rows =
          engine.store.readStates(c, pending.stream().map(i -> i.claim().ref).toList());
      List<Item> again = new ArrayList<>();
      for (Item i : pending) {
        ClaimRef ref = i.claim().ref;
        WorkStore.StoredState row = rows.get(ref.workId());
        if (row != null && row.heldBy(engine.workerId, ref)) {
          again.add(i);
        } else if (row != null
            && row.generation() == ref.generation()
            && row.state().equals(stateWritten(i.settlement()))) {
          log.info("outcome of {} after an interrupted commit: it committed", i.claim());
          report(i, true);
        } else {
          log.info(
              "outcome of {} after an interrupted commit: the lease ended before it could be"
                  + " written again; nothing more to do",
              i.claim());
          engine.ended(i.claim());
        }
      }
      return again;
    } catch (RelayException | SQLException e) {
      log.warn("re-reading claims after an interrupted commit failed: {}", e.toString());
      return null;
    }
  }

  /** The state a settlement leaves its row in. */
  private static String stateWritten(Settlement s) {
    if (s instanceof Settlement.Complete) {
      return "done";
    } else if (s instanceof Settlement.Fail) {
      return "failed";
    } else if (s instanceof Settlement.Cancelled) {
      return "cancelled";
    }
    return "ready"; // retry and release
  }

  /** Gives up outcomes whose lease has certainly passed: no write of them could apply. */
  private List<Item> dropLapsed(List<Item> pending) {
    long now = System.nanoTime();
    List<Item> keep = new ArrayList<>();
    for (Item i : pending) {
      if (now - i.claim().localLeaseDeadline() > 0) {
        log.warn("giving up the outcome of {}: its lease has passed", i.claim());
        engine.ended(i.claim());
      } else {
        keep.add(i);
      }
    }
    return keep;
  }

  private void report(Item item, boolean applied) {
    LiveClaim c = item.claim();
    Settlement s = item.settlement();
    if (!applied) {
      engine.staleWrites.incrementAndGet();
      log.debug("stale {} of {} refused: the claim is no longer current", operation(s), c);
      engine.events.stale(c, operation(s));
    } else if (s instanceof Settlement.Complete) {
      engine.events.completed(c);
    } else if (s instanceof Settlement.Retry r) {
      engine.events.retried(c, r.delay(), r.errorKind(), r.error());
    } else if (s instanceof Settlement.Fail f) {
      log.info("{} failed ({}): {}", c, f.errorKind(), f.error());
      engine.events.failed(c, f.errorKind(), f.error());
    } else if (s instanceof Settlement.Cancelled x) {
      log.info("{} cancelled: {}", c, x.reason());
      engine.events.cancelled(c, x.reason());
    } else if (s instanceof Settlement.Release) {
      engine.events.released(c);
    }
    engine.ended(c);
  }

  static String operation(Settlement s) {
    if (s instanceof Settlement.Complete) {
      return "complete";
    } else if (s instanceof Settlement.Retry) {
      return "retry";
    } else if (s instanceof Settlement.Fail) {
      return "fail";
    } else if (s instanceof Settlement.Cancelled) {
      return "cancelled";
    }
    return "release";
  }

  private void pause(int failures) throws InterruptedException {
    long ceiling = Math.min(2000L, 50L << Math.min(failures, 10));
    Thread.sleep(ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1));
  }
}
