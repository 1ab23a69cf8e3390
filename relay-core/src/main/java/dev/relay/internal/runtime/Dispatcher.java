package dev.relay.internal.runtime;

import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands buffered claims to free handler slots, in claim order: one slot per running attempt, taken
 * before the claim turns RUNNING and given back when its handler returns. A claim that can no
 * longer start before the start margin of its lease is released unrun instead.
 */
final class Dispatcher implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  private final LinkedBlockingQueue<LiveClaim> buffer = new LinkedBlockingQueue<>();
  private final Semaphore slots;
  private final long marginNanos;
  private final Executor executor;
  private final AttemptRunner runner;
  private final Releaser releaser;
  private final Runnable started;
  private final LiveClaims live;
  private final TimeSource time;
  private final Object handlerMonitor = new Object();
  private volatile boolean running = true;

  /**
   * @param started called when an attempt is about to start (the lease keeper re-plans)
   */
  Dispatcher(
      int concurrency,
      long marginNanos,
      Executor executor,
      AttemptRunner runner,
      Releaser releaser,
      Runnable started,
      LiveClaims live,
      TimeSource time) {
    this.slots = new Semaphore(concurrency);
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
      // The start time is written before the phase turns RUNNING: the lease keeper reads the phase
      // first, and a RUNNING claim with no start time would look decades past its timeout.
      c.startedNanos = time.nanoTime();
      if (!c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RUNNING)) {
        slots.release(); // released meanwhile
        continue;
      }
      if (time.nanoTime() - (c.localLeaseDeadline() - marginNanos) >= 0) {
        c.phase.set(LiveClaim.Phase.RELEASING);
        slots.release();
        log.debug("{} cannot start within the start margin of its lease; released", c);
        releaser.release(c);
        continue;
      }
      started.run();
      try {
        executor.execute(() -> runAttempt(c));
      } catch (RejectedExecutionException e) {
        log.warn("the handler executor refused {}; released for other workers", c);
        c.phase.set(LiveClaim.Phase.RELEASING);
        slots.release();
        releaser.release(c);
      }
    }
  }

  private void runAttempt(LiveClaim c) {
    try {
      runner.run(c);
    } finally {
      slots.release();
      synchronized (handlerMonitor) {
        handlerMonitor.notifyAll();
      }
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
