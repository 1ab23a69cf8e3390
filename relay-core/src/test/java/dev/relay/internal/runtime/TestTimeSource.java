package dev.relay.internal.runtime;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/** A {@link TimeSource} that stands still until a test advances it. */
final class TestTimeSource implements TimeSource {
  private static final Instant WALL_START = Instant.parse("2026-01-01T00:00:00Z");

  // Far from zero, and negative, so code that assumes nanoTime is positive or starts at 0 fails.
  private final long start = -1_000_000_000_000L;
  private final AtomicLong nanos = new AtomicLong(start);

  @Override
  public long nanoTime() {
    return nanos.get();
  }

  @Override
  public Instant now() {
    return WALL_START.plusNanos(nanos.get() - start);
  }

  /** Moves both clocks forward by {@code d}. */
  void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }
}
