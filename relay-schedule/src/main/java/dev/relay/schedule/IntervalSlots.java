package dev.relay.schedule;

import java.time.Duration;
import java.time.Instant;

/** Every multiple of an interval since 1970-01-01T00:00:00Z; time zones play no part. */
final class IntervalSlots implements Slots {
  private final long millis;

  IntervalSlots(Duration interval) {
    this.millis = interval.toMillis();
  }

  @Override
  public Instant next(Instant after) {
    // toEpochMilli truncates a sub-millisecond remainder, so floorDiv finds the slot at or before.
    return Instant.ofEpochMilli((Math.floorDiv(after.toEpochMilli(), millis) + 1) * millis);
  }

  @Override
  public Instant latestAtOrBefore(Instant t) {
    return Instant.ofEpochMilli(Math.floorDiv(t.toEpochMilli(), millis) * millis);
  }
}
