package dev.relay.internal.runtime;

import java.time.Instant;

/**
 * Local time as the runtime reads it: a monotonic clock for every decision about leases, run times,
 * renewal and completion delays, and the wall clock for what is only reported. The database clock
 * still decides leases; this is only this worker's own view of elapsed time. Waits stay real waits
 * (a monitor's timed wait), but what a part decides after waking reads this source, so a test can
 * advance it instead of waiting.
 */
interface TimeSource {
  /** The running system's clocks: {@link System#nanoTime()} and {@link Instant#now()}. */
  TimeSource SYSTEM =
      new TimeSource() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public Instant now() {
          return Instant.now();
        }
      };

  /** Monotonic nanoseconds, comparable only with other values of this source (as nanoTime). */
  long nanoTime();

  /** The wall clock, for reporting only: never compared with the database clock. */
  Instant now();
}
