package dev.relay.bench;

import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicLong;

/** Waiting for a peer to finish a burn-down, seen from its handler counter and its table. */
final class PeerSupport {
  private PeerSupport() {}

  /**
   * Waits until the handler ran {@code jobs} times and {@code remainingSql} counts no unfinished
   * row; returns the time of the last observation in nanoseconds.
   */
  static long awaitDrained(BenchDb db, AtomicLong handled, long jobs, String remainingSql)
      throws SQLException, InterruptedException {
    long deadline = System.nanoTime() + 30L * 60 * 1_000_000_000L;
    while (handled.get() < jobs) {
      check(deadline, handled, jobs);
      Thread.sleep(5);
    }
    while (db.queryLong(remainingSql) > 0) {
      check(deadline, handled, jobs);
      Thread.sleep(10);
    }
    return System.nanoTime();
  }

  private static void check(long deadline, AtomicLong handled, long jobs) {
    if (System.nanoTime() > deadline) {
      throw new IllegalStateException("peer did not drain: " + handled.get() + " of " + jobs);
    }
  }
}
