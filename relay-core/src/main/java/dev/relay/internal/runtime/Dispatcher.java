package dev.relay.internal.runtime;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands buffered claims to free handler slots, in claim order: one slot per running attempt, taken
 * before the claim turns RUNNING and given back when its handler returns. A claim that can no
 * longer start before the start margin of its lease, or whose work's deadline passed while it
 * waited, is released unrun instead.
 *
 * <p>A claim of a kind whose handler is a {@link dev.relay.BatchHandler} takes with it the other
 * claims of its kind already in the buffer (claim order, up to the handler's batch size, without
 * waiting for more), and the whole batch runs in <em>one</em> slot on one handler thread; each of
 * its claims is checked against its own start margin first.
 *
 * <p>A claim of a kind whose handler is an {@link dev.relay.AsyncHandler} holds its slot from the
 * start until its stage has completed and its outcome was handed over, while the handler thread
 * that started it is free at once.
 */
final class Dispatcher implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  private final LinkedBlockingQueue<LiveClaim> buffer = new LinkedBlockingQueue<>();
  private final Semaphore slots;
  private final long marginNanos;
  private final Executor executor;
  private final AttemptRunner runner;
  private final Releaser releaser;
  private final Consumer<LiveClaim> started;
  private final LiveClaims live;
  private final TimeSource time;
  private final Map<String, Integer> batchSizes;
  private final Set<String> asyncKinds;
  private final Object handlerMonitor = new Object();
  private volatile boolean running = true;

  /**
   * @param batchSizes the most claims per handler call of each kind whose handler takes batches
   *     (absent: one claim per call)
   * @param asyncKinds the kinds whose handler is an {@link dev.relay.AsyncHandler}: their slot is
   *     held until the stage completes, not while a thread runs
   * @param started called with each claim whose attempt is about to start, after its start time is
   *     set and it is RUNNING (the lease keeper re-plans when it must)
   */
  Dispatcher(
      int concurrency,
      Map<String, Integer> batchSizes,
      Set<String> asyncKinds,
      long marginNanos,
      Executor executor,
      AttemptRunner runner,
      Releaser releaser,
      Consumer<LiveClaim> started,
      LiveClaims live,
      TimeSource time) {
    this.slots = new Semaphore(concurrency);
    this.batchSizes = Map.copyOf(batchSizes);
    this.asyncKinds = Set.copyOf(asyncKinds);
    this.marginNanos = marginNanos;
    this.executor = executor;
    this.runner = runner;
    this.releaser = releaser;
    this.started = started;
    this.live = live;
    this.time = time;
  }

  /** Buffers a claimed item to be started when a slot is free. */
  void add(LiveClaim c) {
    buffer.add(c);
  }

  /** Stops taking claims from the buffer (the thread is interrupted by its owner). */
  void stop() {
    running = false;
  }

  @Override
  public void run() {
    while (running) {
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
      if (!batchSizes.isEmpty()) {
        Integer batch = batchSizes.get(c.kind());
        if (batch != null) {
          startBatch(c, batch);
          continue;
        }
      }
      startInSlot(c, releaser::release);
    }
  }

  /**
   * Takes a handler slot for a local hand-off, if one is free now, without waiting. The slot is
   * held until {@link #startReserved} runs a claim in it or {@link #unreserve} gives it back.
   */
  boolean reserve() {
    return running && slots.tryAcquire();
  }

  /** Gives back a slot taken by {@link #reserve} that will run nothing. */
  void unreserve() {
    slots.release();
  }

  /**
   * Starts a handed-off claim (phase BUFFERED) in the slot {@link #reserve} took for it, or, past
   * the start margin of its lease, hands it to {@code release} unstarted.
   */
  void startReserved(LiveClaim c, Consumer<LiveClaim> release) {
    startInSlot(c, release);
  }

  /** Starts {@code c} (a slot is held for it), or releases it past its start margin. */
  private void startInSlot(LiveClaim c, Consumer<LiveClaim> release) {
    // The start time is written before the phase turns RUNNING: the lease keeper reads the phase
    // first, and a RUNNING claim with no start time would look decades past its timeout.
    c.startedNanos = time.nanoTime();
    if (!c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RUNNING)) {
      slots.release(); // released meanwhile
      return;
    }
    if (!startable(c, time.nanoTime())) {
      c.phase.set(LiveClaim.Phase.RELEASING);
      slots.release();
      release.accept(c);
      return;
    }
    started.accept(c);
    try {
      executor.execute(() -> runAttempt(c));
    } catch (RejectedExecutionException e) {
      log.warn("the handler executor refused {}; released for other workers", c);
      c.phase.set(LiveClaim.Phase.RELEASING);
      slots.release();
      release.accept(c);
    }
  }

  /**
   * Starts {@code first} (a slot is held for it) together with the buffered claims of its kind, up
   * to {@code max}, as one batch in that slot.
   */
  private void startBatch(LiveClaim first, int max) {
    List<LiveClaim> taken = new ArrayList<>(Math.min(max, 1 + buffer.size()));
    taken.add(first);
    if (max > 1) {
      // Only what is already here: a batch never waits for claims to arrive.
      for (Iterator<LiveClaim> it = buffer.iterator(); it.hasNext() && taken.size() < max; ) {
        LiveClaim next = it.next();
        if (next.kind().equals(first.kind())) {
          it.remove(); // only this thread takes from the buffer
          taken.add(next);
        }
      }
    }
    long now = time.nanoTime();
    List<LiveClaim> batch = new ArrayList<>(taken.size());
    for (LiveClaim c : taken) {
      c.startedNanos = now; // before RUNNING, as for one claim
      if (!c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RUNNING)) {
        continue; // released meanwhile
      }
      if (!startable(c, now)) {
        c.phase.set(LiveClaim.Phase.RELEASING);
        releaser.release(c);
        continue;
      }
      batch.add(c);
    }
    if (batch.isEmpty()) {
      slots.release();
      return;
    }
    batch.forEach(started);
    try {
      executor.execute(() -> runBatch(batch));
    } catch (RejectedExecutionException e) {
      log.warn(
          "the handler executor refused a batch of {} claims; released for other workers",
          batch.size());
      slots.release();
      for (LiveClaim c : batch) {
        c.phase.set(LiveClaim.Phase.RELEASING);
        releaser.release(c);
      }
    }
  }

  /**
   * Whether a buffered claim may start at {@code now}: within the start margin of its lease, and
   * before its work's deadline. A deadline that passed while the claim waited for a slot (on the
   * estimate of the database clock, which runs at most a round trip ahead) means the work must not
   * start: the claim is released unrun, and the next claim, deciding on the database clock, ends it
   * as {@code deadline} (or, if the estimate ran ahead, runs it).
   */
  private boolean startable(LiveClaim c, long now) {
    if (now - (c.localLeaseDeadline() - marginNanos) >= 0) {
      log.debug("{} cannot start within the start margin of its lease; released", c);
      return false;
    }
    if (c.deadlinePassed()) {
      log.info("{} passed its deadline while it waited for a slot; released unrun", c);
      return false;
    }
    return true;
  }

  private void runBatch(List<LiveClaim> batch) {
    try {
      runner.runAll(batch);
    } finally {
      handlerEnded();
    }
  }

  private void runAttempt(LiveClaim c) {
    if (!asyncKinds.isEmpty() && asyncKinds.contains(c.kind())) {
      runner.start(c, executor, this::handlerEnded); // the slot stays taken until the stage ends
      return;
    }
    try {
      runner.run(c);
    } finally {
      handlerEnded();
    }
  }

  /** An attempt ended: its slot is free. */
  private void handlerEnded() {
    slots.release();
    synchronized (handlerMonitor) {
      handlerMonitor.notifyAll();
    }
  }

  /**
   * Waits until no handler runs or {@code deadline} (the time source's nanoTime) passes. Returns
   * early if the calling thread is interrupted (its interrupt status is kept).
   */
  void awaitHandlers(long deadline) {
    synchronized (handlerMonitor) {
      long left;
      while (live.anyRunning() && (left = deadline - time.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(handlerMonitor, Math.min(left, 100_000_000L));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
