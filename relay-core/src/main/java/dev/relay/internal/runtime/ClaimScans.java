package dev.relay.internal.runtime;

import dev.relay.internal.store.ClaimPosition;
import java.util.concurrent.TimeUnit;

/**
 * Whether the next claim reads the claim index from its start (a full scan) or resumes where the
 * previous claim stopped, from what the claims so far returned and took: no clock of its own and no
 * database, so every rule is testable with given times.
 *
 * <p>A resumed claim skips the index entries of rows already taken, which lie at the start of the
 * claim order until vacuum removes them, and which a long-open transaction elsewhere (a held xmin
 * horizon) keeps from being removed at all. Only a full scan finds a row that became eligible
 * behind the position: a higher priority, an expired lease, the next item of an ordering key, a row
 * whose producer committed after a later one was claimed, a lower priority once the position's own
 * is exhausted. So a full scan comes after any short claim and at least every {@link
 * #MIN_INTERVAL_NANOS}, as long as full scans are cheap.
 *
 * <p>When they are not (every entry a full scan walks past costs a heap visit while the horizon is
 * held), a full scan every 500 ms would soon take longer than the interval itself, and every claim
 * would become one: a burn-down of a million jobs under a held horizon fell to a few hundred jobs a
 * second. So a full scan is due only once the time since the last one started is at least {@link
 * #COST_SHARE} times what full scans take, and while that time has not passed, a short claim keeps
 * the position too. What full scans take is the shorter of the last two: one slow scan (a pause of
 * the JVM or the network) does not change the rhythm; a growing cost does, one scan later. Full
 * scans then take at most about one part in {@code COST_SHARE} of the claimer's time, and work
 * behind the position waits at most about {@code COST_SHARE} full scans' time longer than with
 * cheap scans.
 */
final class ClaimScans {
  /** The shortest time between two full scans in a backlog. */
  static final long MIN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

  /**
   * A full scan is due no sooner than this many times its own last duration after that one started
   * (and no sooner than {@link #MIN_INTERVAL_NANOS}).
   */
  static final int COST_SHARE = 10;

  private ClaimPosition position;
  private boolean scanned; // a full scan has been made
  private long lastFullStart;
  private long lastFullNanos;
  private long fullNanos; // the shorter of the last two full scans' durations

  /**
   * Where the claim sent at {@code now} resumes, or {@code null} for a full scan.
   *
   * @param now the claim's start on the claimer's monotonic clock
   */
  ClaimPosition resumeAt(long now) {
    return position != null && !fullScanDue(now) ? position : null;
  }

  private boolean fullScanDue(long now) {
    if (!scanned) {
      return true;
    }
    long interval = Math.max(MIN_INTERVAL_NANOS, saturatedTimes(fullNanos, COST_SHARE));
    return now - lastFullStart >= interval;
  }

  /** Full scans cost little: short claims go back to the start at once. */
  private boolean fullScansCheap() {
    return saturatedTimes(fullNanos, COST_SHARE) <= MIN_INTERVAL_NANOS;
  }

  /**
   * Records a claim's result.
   *
   * @param resumedAt the position the claim resumed at ({@code null}: it was a full scan)
   * @param sent when it was sent
   * @param took how long it took
   * @param full whether it came back full (a backlog)
   * @param last where it stopped: the last row it took or ended in claim order, or {@code null}
   *     when it returned none
   */
  void claimed(ClaimPosition resumedAt, long sent, long took, boolean full, ClaimPosition last) {
    if (resumedAt == null) {
      long nanos = Math.max(0, took);
      fullNanos = scanned ? Math.min(lastFullNanos, nanos) : 0;
      scanned = true;
      lastFullStart = sent;
      lastFullNanos = nanos;
    }
    if (full) {
      position = last;
    } else if (fullScansCheap()) {
      position = null; // short: the next claim looks behind the position
    } else if (last != null) {
      // short, and full scans are dear: the due time above decides when the next one comes; a
      // short claim that took nothing keeps the position it had
      position = last;
    }
  }

  /** Forgets the position: the next claim is a full scan (after a failed claim). */
  void reset() {
    position = null;
  }

  private static long saturatedTimes(long nanos, int factor) {
    return nanos > Long.MAX_VALUE / factor ? Long.MAX_VALUE : nanos * factor;
  }
}
