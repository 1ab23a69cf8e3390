package dev.relay.internal.runtime;

import java.util.concurrent.TimeUnit;

/**
 * A wake-up for one waiting thread, free of lost wake-ups: the waiter reads a {@link #mark()},
 * decides, and {@linkplain #await waits} only if nothing was signalled since that mark. A {@link
 * #request()} also asks for action now (the claimer: a notification arrived, claim at once); a
 * {@link #signal()} only says something changed (capacity freed: look again).
 */
final class WakeSignal {
  private long signals; // guarded by this
  private boolean requested; // guarded by this

  /** Something changed: a waiter looks again. */
  synchronized void signal() {
    signals++;
    notifyAll();
  }

  /** Asks for action now, and wakes the waiter. */
  synchronized void request() {
    requested = true;
    signal();
  }

  /** The count of signals so far, to pass to {@link #await}. */
  synchronized long mark() {
    return signals;
  }

  /** Whether action was requested since the request was last {@linkplain #clearRequest cleared}. */
  synchronized boolean requested() {
    return requested;
  }

  synchronized void clearRequest() {
    requested = false;
  }

  /**
   * Waits up to {@code nanos}, unless a signal came after {@code mark} (then returns at once).
   *
   * @throws InterruptedException if the waiting thread is interrupted
   */
  synchronized void await(long mark, long nanos) throws InterruptedException {
    if (signals == mark && nanos > 0) {
      TimeUnit.NANOSECONDS.timedWait(this, nanos);
    }
  }
}
