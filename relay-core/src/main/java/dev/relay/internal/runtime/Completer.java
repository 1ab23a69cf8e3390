package dev.relay.internal.runtime;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayConfig;
import dev.relay.RelayException;
import dev.relay.WorkState;
import dev.relay.internal.store.AbandonedOutcome;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import dev.relay.internal.store.WriteResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records outcomes in batches: one transaction per batch, the guard checked per row by {@link
 * dev.relay.internal.store.WorkStore#settle}. {@link #WRITERS} threads run {@link #run} over one
 * queue, each taking the oldest waiting outcome and whatever is queued behind it and writing that
 * at once. So the batching adapts to the load: while batches stay small, an outcome that arrives
 * while one batch commits is written at once by the other writer instead of waiting for that
 * commit; once batches grow (a quarter of {@code completionBatchSize}), a writer waits for the
 * other to finish, and the outcomes collect into the next batch (a natural group commit), bounded
 * by size and by how long its first outcome waits while more keep arriving. A refused (stale) write
 * is counted and reported, never retried. A failed batch that certainly rolled back is repeated
 * while the claims' leases last; a batch whose COMMIT was cut off is not repeated blindly: the
 * stored rows are re-read and only the claims this worker still holds are written again.
 *
 * <p>Two batches in flight never deadlock: each locks its rows in work-ID order. Two generations of
 * one work ID in flight at once are both guarded, so at most the current one applies.
 */
final class Completer implements Completions, Runnable {
  private static final Logger log = LoggerFactory.getLogger(Completer.class);

  record Item(LiveClaim claim, Settlement settlement) {}

  private static final Duration PAUSE_BASE = Duration.ofMillis(50);
  private static final Duration PAUSE_CAP = Duration.ofSeconds(2);

  /**
   * How many batches are written at once while batches are small. One writer makes an outcome that
   * arrives while a batch commits wait for that commit and then for its own; a second writes it at
   * once, and PostgreSQL flushes the two commits together. Each writer holds a connection while it
   * writes.
   */
  static final int WRITERS = 2;

  /** The most given-up outcomes kept in memory until they can be recorded. */
  static final int MAX_UNRECORDED = 10_000;

  private final String workerId;
  private final int batchSize;
  private final long maxDelayNanos;
  private final WorkStore store;
  private final TrackedConnections connections;
  private final Events events;
  private final TimeSource time;
  private final Consumer<LiveClaim> done;
  private final Runnable submitted;
  private final AtomicLong staleWrites;
  private final Object abandonedLock = new Object();
  private final List<AbandonedOutcome> unrecorded = new ArrayList<>(); // guarded by abandonedLock
  private int unrecordedOverflow; // guarded by abandonedLock
  private int recordFailures; // guarded by abandonedLock
  private long nextRecordTry; // guarded by abandonedLock
  private final ReentrantLock recordingAbandoned = new ReentrantLock(); // one writer at a time
  private final LinkedBlockingQueue<Item> queue = new LinkedBlockingQueue<>();
  private final Deque<Item> carry = new ConcurrentLinkedDeque<>(); // taken before the queue
  private final AtomicInteger writers = new AtomicInteger(); // running run()s
  private final Object turns = new Object();
  private int inWrite; // guarded by turns: writers between enterWrite and leaveWrite
  private int lastBatch; // guarded by turns: the size of the batch written last
  private final int loadedBatch; // a batch this large means load: one write at a time
  private final AtomicInteger pending = new AtomicInteger();
  private final Object accept = new Object();
  private boolean accepting = true; // guarded by accept
  private volatile boolean running = true;
  private volatile boolean abandoned;
  private volatile Runnable afterAcceptCheck = () -> {};

  /**
   * @param done called once per outcome that needs nothing more from the completer (recorded,
   *     refused, given up, or dropped at close): its claim has ended
   * @param submitted called after an outcome was queued (its claim capacity is free now)
   * @param staleWrites counts writes refused because the claim was no longer current
   */
  Completer(
      RelayConfig config,
      WorkStore store,
      TrackedConnections connections,
      Events events,
      TimeSource time,
      Consumer<LiveClaim> done,
      Runnable submitted,
      AtomicLong staleWrites) {
    this.workerId = config.workerId();
    this.batchSize = config.completionBatchSize();
    this.loadedBatch = Math.max(2, batchSize / 4);
    this.maxDelayNanos = config.completionMaxDelay().toNanos();
    this.store = store;
    this.connections = connections;
    this.events = events;
    this.time = time;
    this.done = done;
    this.submitted = submitted;
    this.staleWrites = staleWrites;
  }

  /**
   * Test seam: {@code hook} runs inside {@link #submit} after the check that the completer still
   * accepts outcomes and before the outcome is queued, so a test can hold a submit exactly there
   * while the completer stops.
   */
  void afterAcceptCheck(Runnable hook) {
    this.afterAcceptCheck = hook;
  }

  /**
   * Queues an outcome; {@code false} once the completer has stopped (the caller gives up). Checked
   * and queued under one lock that the completer's exit also takes, so nothing is queued after the
   * completer drained its queue for the last time.
   */
  @Override
  public boolean submit(LiveClaim claim, Settlement settlement) {
    synchronized (accept) {
      if (!accepting) {
        return false;
      }
      afterAcceptCheck.run();
      pending.incrementAndGet();
      queue.add(new Item(claim, settlement));
    }
    submitted.run(); // its claim capacity is free now
    return true;
  }

  @Override
  public int pending() {
    return pending.get();
  }

  private void stopAccepting() {
    synchronized (accept) {
      accepting = false;
    }
  }

  /** The outcome needs nothing more from the completer. */
  private void settled(Item item) {
    pending.decrementAndGet();
    done.accept(item.claim());
  }

  /** Stops after recording what is queued. */
  void finish() {
    running = false;
  }

  /** Stops at once, dropping what is left (their leases will expire). */
  void abandon() {
    stopAccepting();
    running = false;
    abandoned = true;
  }

  /**
   * One writer's loop; {@link #WRITERS} threads run it at once over the same queue. The last one to
   * stop reports the given-up outcomes it could not keep in the attempt history.
   */
  @Override
  public void run() {
    writers.incrementAndGet();
    try {
      while (!abandoned && (running || !queue.isEmpty() || !carry.isEmpty())) {
        List<Item> batch = nextBatch();
        if (!batch.isEmpty()) {
          try {
            flush(batch);
          } finally {
            leaveWrite(batch.size());
          }
        }
        recordAbandoned();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      stopAccepting();
      List<Item> left = new ArrayList<>();
      for (Item i = carry.poll(); i != null; i = carry.poll()) {
        left.add(i);
      }
      queue.drainTo(left);
      if (!left.isEmpty()) {
        log.warn(
            "relay closed before {} outcomes were recorded; their leases will expire and another"
                + " worker will take them: {}",
            left.size(),
            left.stream().map(i -> operation(i.settlement()) + " of " + i.claim()).toList());
      }
      for (Item i : left) {
        settled(i);
      }
      if (writers.decrementAndGet() == 0) {
        reportUnrecorded();
      }
    }
  }

  private void reportUnrecorded() {
    synchronized (abandonedLock) {
      if (!unrecorded.isEmpty() || unrecordedOverflow > 0) {
        log.warn(
            "relay closed before {} outcomes it gave up could be kept in the attempt history: {}",
            unrecorded.size() + unrecordedOverflow,
            unrecorded.stream()
                .map(
                    a ->
                        a.operation().sql()
                            + " of "
                            + a.ref().workId()
                            + " generation "
                            + a.ref().generation())
                .toList());
      }
    }
  }

  /**
   * The next batch: the oldest waiting outcome and whatever is queued behind it, up to the batch
   * size. It does not wait for a batch to fill: when the queue is empty the batch is written at
   * once, and outcomes that arrive meanwhile go to a free writer, or form the next batch while
   * every writer is busy. Only while outcomes keep arriving does it go on taking them, for at most
   * {@code completionMaxDelay} after the first.
   */
  private List<Item> nextBatch() throws InterruptedException {
    List<Item> batch = new ArrayList<>();
    Item first = carry.isEmpty() ? queue.poll(100, TimeUnit.MILLISECONDS) : carry.poll();
    if (first == null) {
      return batch;
    }
    enterWrite(); // under load, after the other writer: the batch fills meanwhile
    Set<String> ids = new HashSet<>();
    List<Item> deferred = new ArrayList<>();
    batch.add(first);
    ids.add(first.claim().workId());
    long deadline = time.nanoTime() + maxDelayNanos;
    while (batch.size() < batchSize && time.nanoTime() - deadline < 0) {
      Item next = carry.poll();
      if (next == null) {
        next = queue.poll();
      }
      if (next == null) {
        break; // nothing else is coming now: write what there is
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

  /**
   * Takes this writer into a write. While batches stay small (the last one held fewer than {@link
   * #loadedBatch} outcomes: a quiet or moderately busy worker) it goes on at once, also while the
   * other writer writes, so an outcome never waits for another batch's commit. Under load (larger
   * batches) it waits until no other writer writes, so outcomes collect into full batches and a
   * backlog is recorded with as few transactions as with one writer.
   */
  private void enterWrite() throws InterruptedException {
    synchronized (turns) {
      while (inWrite > 0 && lastBatch >= loadedBatch && !abandoned) {
        turns.wait(100);
      }
      inWrite++;
    }
  }

  private void leaveWrite(int size) {
    synchronized (turns) {
      inWrite--;
      lastBatch = size;
      turns.notifyAll();
    }
  }

  /**
   * Writes a batch. A batch that fails for a reason that is not retryable is split in halves, each
   * written on its own, so that one row the database refuses cannot hold the others; an outcome
   * that fails alone is failed with the evidence of why ({@link #failUnrecordable}).
   */
  private void flush(List<Item> batch) throws InterruptedException {
    Deque<List<Item>> parts = new ArrayDeque<>();
    parts.add(batch);
    while (!parts.isEmpty() && !abandoned) {
      List<Item> part = parts.poll();
      Refused refused = write(part);
      if (refused == null) {
        continue;
      }
      if (refused.items().size() > 1) {
        int half = refused.items().size() / 2;
        parts.addFirst(refused.items().subList(half, refused.items().size()));
        parts.addFirst(refused.items().subList(0, half));
      } else {
        failUnrecordable(refused.items().get(0), refused.error());
      }
    }
    parts.forEach(carry::addAll); // stopped while writing: reported and ended on the way out
  }

  /** Outcomes the database refused to record, for a reason that retrying does not change. */
  private record Refused(List<Item> items, RelayException error) {}

  /**
   * Writes {@code batch} in one transaction, repeating it with backoff after a retryable failure
   * while the claims' leases last. Returns what the database refused for a reason that is not
   * retryable, or {@code null} when nothing is left to do.
   */
  private Refused write(List<Item> batch) throws InterruptedException {
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
      try (Connection c = connections.open("record outcomes")) {
        List<WriteResult> results;
        try {
          results = store.settle(c, workerId, pending.stream().map(Item::settlement).toList());
        } catch (CommitOutcomeUnknownException e) {
          throw e;
        } catch (RelayException e) {
          if (e.isRetryable()) {
            throw e;
          }
          log.warn(
              "the database refused to record {} outcomes, for a reason retrying does not"
                  + " change{}: {}",
              pending.size(),
              pending.size() > 1 ? "; writing them in smaller batches" : "",
              e.toString());
          events.error("record outcomes", e);
          pending.forEach(i -> i.claim().recordingFailed()); // rolled back: renew them meanwhile
          return new Refused(pending, e);
        }
        for (int i = 0; i < results.size(); i++) {
          report(pending.get(i), results.get(i).applied(), results.get(i).recordedAs());
        }
        pending = List.of();
      } catch (CommitOutcomeUnknownException e) {
        log.warn(
            "the connection was lost while committing {} outcomes; re-reading the rows",
            pending.size());
        events.error("record outcomes", e);
        uncertain = true;
      } catch (RelayException | SQLException e) {
        log.warn("recording {} outcomes failed; retrying: {}", pending.size(), e.toString());
        events.error("record outcomes", e);
        pending.forEach(i -> i.claim().recordingFailed()); // rolled back: renew them meanwhile
        pending = dropLapsed(pending);
        pause(++failures);
      }
    }
    carry.addAll(pending); // stopped while writing: reported and ended on the way out
    return null;
  }

  /**
   * An outcome the database refuses to record on its own, for a reason retrying does not change:
   * the work is failed (guarded, like any settlement) with error kind {@code record_failed}, the
   * outcome it could not record and the database's reason, keeping the outcome's evidence (a done
   * that cannot be recorded still happened). Repeating it would hold the worker's capacity until
   * the lease passed and then run the work again, to the same end. If even that write fails, the
   * claim is left to its lease.
   */
  private void failUnrecordable(Item item, RelayException error) throws InterruptedException {
    Settlement s = item.settlement();
    if (s instanceof Settlement.Release) {
      log.warn("{} could not be released ({}); it is left to its lease", item.claim(), error);
      settled(item);
      return;
    }
    Settlement.Fail fail =
        new Settlement.Fail(
            s.ref(),
            "record_failed",
            "the database refused to record this outcome ("
                + describe(s)
                + "): "
                + error.getMessage(),
            evidence(s));
    Refused refused = write(List.of(new Item(item.claim(), fail)));
    if (refused != null) {
      log.warn(
          "{} could not be recorded, nor failed ({}); it is left to its lease",
          item.claim(),
          refused.error().toString());
      settled(refused.items().get(0));
    }
  }

  private static String describe(Settlement s) {
    if (s instanceof Settlement.Complete d) {
      return "done" + (d.receiverRef() == null ? "" : ", receiver reference " + d.receiverRef());
    } else if (s instanceof Settlement.Retry r) {
      return "retry, " + r.errorKind();
    } else if (s instanceof Settlement.Snooze) {
      return "snooze";
    } else if (s instanceof Settlement.Fail f) {
      return "fail, " + f.errorKind();
    } else if (s instanceof Settlement.Cancelled) {
      return "cancelled";
    }
    return operation(s);
  }

  private static Settlement.Evidence evidence(Settlement s) {
    if (s instanceof Settlement.Complete) {
      return Settlement.Evidence.DELIVERED;
    } else if (s instanceof Settlement.Retry r) {
      return r.evidence();
    } else if (s instanceof Settlement.Snooze) {
      return Settlement.Evidence.NOT_DELIVERED;
    } else if (s instanceof Settlement.Fail f) {
      return f.evidence();
    } else if (s instanceof Settlement.Cancelled x) {
      return x.evidence();
    }
    return Settlement.Evidence.NOT_DELIVERED;
  }

  /**
   * After a COMMIT whose outcome is unknown, the stored rows decide: a claim this worker still
   * holds (running, same generation, lease live) was not settled and is returned to be written
   * again; a row at the same generation in the state this settlement writes was settled by that
   * commit, and is reported as applied; anything else lost its lease meanwhile and needs nothing
   * more. Returns {@code null} if the rows cannot be read now.
   */
  private List<Item> resolve(List<Item> pending) {
    try (Connection c = connections.open("re-read claims")) {
      Map<String, WorkStore.StoredState> rows =
          store.readStates(c, pending.stream().map(i -> i.claim().ref).toList());
      List<Item> again = new ArrayList<>();
      for (Item i : pending) {
        ClaimRef ref = i.claim().ref;
        WorkStore.StoredState row = rows.get(ref.workId());
        if (row != null && row.heldBy(workerId, ref)) {
          again.add(i);
        } else if (row != null
            && row.generation() == ref.generation()
            && writes(i.settlement(), row.workState())) {
          log.info("outcome of {} after an interrupted commit: it committed", i.claim());
          report(i, true);
        } else {
          giveUp(i, "the lease ended before it could be written again after an interrupted commit");
        }
      }
      return again;
    } catch (RelayException | SQLException e) {
      log.warn("re-reading claims after an interrupted commit failed: {}", e.toString());
      return null;
    }
  }

  /**
   * Whether {@code settlement}, committed, leaves its row in {@code state}. A retry past the kind's
   * attempt cap is stored as {@code failed} ({@code attempts_exhausted}), so a retry matches
   * either.
   */
  private static boolean writes(Settlement settlement, WorkState state) {
    if (settlement instanceof Settlement.Complete) {
      return state == WorkState.DONE;
    } else if (settlement instanceof Settlement.Fail) {
      return state == WorkState.FAILED;
    } else if (settlement instanceof Settlement.Cancelled) {
      return state == WorkState.CANCELLED;
    } else if (settlement instanceof Settlement.Retry || settlement instanceof Settlement.Snooze) {
      return state == WorkState.READY || state == WorkState.FAILED;
    }
    return state == WorkState.READY; // release
  }

  /** Gives up outcomes whose lease has certainly passed: no write of them could apply. */
  private List<Item> dropLapsed(List<Item> pending) {
    long now = time.nanoTime();
    List<Item> keep = new ArrayList<>();
    for (Item i : pending) {
      if (now - i.claim().localLeaseDeadline() > 0) {
        giveUp(i, "its lease passed before PostgreSQL could record it");
      } else {
        keep.add(i);
      }
    }
    return keep;
  }

  /**
   * Gives up an outcome that can no longer be recorded (its claim's lease has passed): reported to
   * the listener now, and kept to be written to the attempt history (ending {@code abandoned}) once
   * PostgreSQL can be reached ({@link #recordAbandoned}).
   */
  private void giveUp(Item item, String why) {
    String operation = operation(item.settlement());
    log.warn("giving up the {} of {}: {}", operation, item.claim(), why);
    events.abandoned(item.claim(), operation);
    synchronized (abandonedLock) {
      if (unrecorded.size() < MAX_UNRECORDED) {
        unrecorded.add(AbandonedOutcome.of(item.settlement()));
      } else {
        unrecordedOverflow++;
      }
    }
    settled(item);
  }

  /**
   * Writes the outcomes given up so far to the attempt history, when a try is due (with backoff
   * while PostgreSQL cannot be reached). Safe to repeat: the store skips a claim already recorded,
   * so a try whose COMMIT was cut off is simply made again.
   */
  private void recordAbandoned() {
    if (!recordingAbandoned.tryLock()) {
      return; // the other writer is at it
    }
    try {
      List<AbandonedOutcome> batch;
      synchronized (abandonedLock) {
        if (unrecorded.isEmpty() || time.nanoTime() - nextRecordTry < 0) {
          return;
        }
        batch = List.copyOf(unrecorded);
      }
      try (Connection c = connections.open("record abandoned outcomes")) {
        int added = store.recordAbandoned(c, workerId, batch);
        log.info(
            "kept {} given-up outcomes in the attempt history (ending abandoned; {} new)",
            batch.size(),
            added);
        synchronized (abandonedLock) {
          unrecorded.subList(0, batch.size()).clear();
          if (unrecordedOverflow > 0) {
            log.warn(
                "{} more given-up outcomes were not kept: more than {} waited at once",
                unrecordedOverflow,
                MAX_UNRECORDED);
            unrecordedOverflow = 0;
          }
          recordFailures = 0;
        }
      } catch (RelayException | SQLException e) {
        log.warn(
            "keeping {} given-up outcomes in the attempt history failed; trying again later: {}",
            batch.size(),
            e.toString());
        synchronized (abandonedLock) {
          recordFailures++;
          nextRecordTry =
              time.nanoTime() + Backoff.pause(PAUSE_BASE, PAUSE_CAP, recordFailures).toNanos();
        }
      }
    } finally {
      recordingAbandoned.unlock();
    }
  }

  private void report(Item item, boolean applied) {
    report(item, applied, null);
  }

  /**
   * Reports one write. {@code recordedAs} is the action the store recorded when known: a snooze
   * past its kind's cap is recorded as a retry (or, with the attempts used up, a failure), and is
   * reported as what it became.
   */
  private void report(Item item, boolean applied, String recordedAs) {
    LiveClaim c = item.claim();
    Settlement s = item.settlement();
    if (applied && s instanceof Settlement.Snooze z) {
      if ("retry".equals(recordedAs)) {
        events.retried(c, z.delay(), Settlement.Snooze.SNOOZE_LIMIT, z.reason());
      } else if ("fail".equals(recordedAs)) {
        log.info("{} failed (attempts_exhausted) after its snoozes: {}", c, z.reason());
        events.failed(c, "attempts_exhausted", z.reason());
      } else {
        events.snoozed(c, z.delay(), z.reason());
      }
      settled(item);
      return;
    }
    if (!applied) {
      staleWrites.incrementAndGet();
      log.debug("stale {} of {} refused: the claim is no longer current", operation(s), c);
      events.stale(c, operation(s));
    } else if (s instanceof Settlement.Complete) {
      events.completed(c);
    } else if (s instanceof Settlement.Retry r) {
      events.retried(c, r.delay(), r.errorKind(), r.error());
    } else if (s instanceof Settlement.Fail f) {
      log.info("{} failed ({}): {}", c, f.errorKind(), f.error());
      events.failed(c, f.errorKind(), f.error());
    } else if (s instanceof Settlement.Cancelled x) {
      log.info("{} cancelled: {}", c, x.reason());
      events.cancelled(c, x.reason());
    } else if (s instanceof Settlement.Release) {
      events.released(c);
    }
    settled(item);
  }

  static String operation(Settlement s) {
    if (s instanceof Settlement.Complete) {
      return "complete";
    } else if (s instanceof Settlement.Retry) {
      return "retry";
    } else if (s instanceof Settlement.Snooze) {
      return "snooze";
    } else if (s instanceof Settlement.Fail) {
      return "fail";
    } else if (s instanceof Settlement.Cancelled) {
      return "cancelled";
    }
    return "release";
  }

  private void pause(int failures) throws InterruptedException {
    Thread.sleep(Backoff.pause(PAUSE_BASE, PAUSE_CAP, failures).toMillis());
  }
}
