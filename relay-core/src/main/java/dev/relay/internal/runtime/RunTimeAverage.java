package dev.relay.internal.runtime;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A moving average of handler run time in nanoseconds (each new sample weighs 1/8), read by the
 * claimer to size its claims. Zero until a handler returned.
 */
final class RunTimeAverage {
  private final AtomicLong nanos = new AtomicLong();

  void record(long tookNanos) {
    nanos.accumulateAndGet(tookNanos, (avg, x) -> avg == 0 ? x : avg + (x - avg) / 8);
  }

  /** The average so far, or 0 if nothing was recorded. */
  long nanos() {
    return nanos.get();
  }
}
