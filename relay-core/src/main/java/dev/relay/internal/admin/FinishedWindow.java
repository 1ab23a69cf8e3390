package dev.relay.internal.admin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Work that ended done or failed within a window {@code [start, end]}, counted from the charts'
 * rollup (V20) where the maintenance leader's fold has reached, and from the work table and the
 * history table (the work view, {@link AdminSql#windowLive}) around it, so that the counts are
 * those of the whole window without reading every finished row in it.
 *
 * <p>The window is split in three: the head, from {@code start} up to the first whole bucket of the
 * rollup tier chosen (less than one bucket: under a minute for windows up to 3 hours), read from
 * the work table; the rollup's buckets from there, which hold exactly the work up to the fold's
 * position (it folds in (completed_at, work_id) order and moves the position in the same
 * transaction); and the tail after that position up to {@code end}, read from the work table: the
 * work not folded yet, a minute or two behind a running maintenance leader. The position and the
 * buckets are read in one statement, so a fold committing meanwhile is counted once, in the tail.
 * Without a leader (or with a fold more than the window behind) the rollup holds nothing of the
 * window and the whole window is read from the work table, as before the rollup existed: an index
 * range that grows with the work finished within the window.
 *
 * <p>The rollup counts each ending once, when it is folded: a failed item redriven later is still
 * counted failed in the minute it failed, and purged work stays counted. Latency comes as {@link
 * LatencyHistogram} bins on both sides, so percentiles are the histogram's (within {@link
 * LatencyHistogram#RELATIVE_ERROR} of a value in their bin).
 */
final class FinishedWindow {
  /**
   * How long each tier of {@link RollupFold#SPANS} keeps its buckets ({@link
   * RollupSql#purgeBuckets}): the fold drops older ones, measured from its own clock.
   */
  static final Duration[] KEEP = {
    Duration.ofHours(3), Duration.ofHours(26), Duration.ofDays(8).plusHours(2)
  };

  private final Instant start;
  private final Instant end;
  private final int span;
  private final Instant rollupFrom;

  /**
   * The window {@code [start, end]} over the tier whose whole buckets cover the most of it ({@code
   * minutesOnly}: the 1-minute tier only, for a per-minute chart).
   */
  FinishedWindow(Instant start, Instant end, boolean minutesOnly) {
    this.start = start;
    this.end = end;
    int bestSpan = 0;
    Instant bestFrom = null;
    for (int i = 0; i < RollupFold.SPANS.length; i++) {
      int s = RollupFold.SPANS[i];
      if (minutesOnly && s != 60) {
        continue;
      }
      Instant from = ceil(start, s);
      // a bucket to spare: a fold running meanwhile measures its keep from a later clock
      Instant kept = ceil(end.minus(KEEP[i]).plusSeconds(s), s);
      if (kept.isAfter(from)) {
        from = kept;
      }
      if (bestFrom == null || from.isBefore(bestFrom)) {
        bestSpan = s;
        bestFrom = from;
      }
    }
    this.span = bestSpan;
    this.rollupFrom = bestFrom;
  }

  /** One (queue, kind). */
  record Pair(String queue, String kind) {}

  /** A pair's work finished in the window. */
  static final class Counts {
    long done;
    final long[] bins = new long[LatencyHistogram.BINS];
    final Map<String, Long> failures = new LinkedHashMap<>();
  }

  /** Done counts, latency bins and failures by reason per (queue, kind), in the transaction. */
  Map<Pair, Counts> pairs(Connection tx, AdminSql sql, RollupSql rollup) throws SQLException {
    Map<Pair, Counts> result = new LinkedHashMap<>();
    OffsetDateTime at = null;
    String id = null;
    try (PreparedStatement ps = tx.prepareStatement(rollup.windowTotals)) {
      ps.setInt(1, span);
      ps.setObject(2, utc(rollupFrom));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          at = rs.getObject("last_completed_at", OffsetDateTime.class);
          id = rs.getString("last_work_id");
          String measure = rs.getString("measure");
          if (measure != null) {
            Counts c = counts(result, rs);
            long n = rs.getLong("n");
            switch (measure) {
              case "done" -> c.done += n;
              case "bin" -> c.bins[rs.getInt("bin")] += n;
              default -> c.failures.merge(rs.getString("reason"), n, Long::sum);
            }
          }
        }
      }
    }
    boolean folded = folded(at);
    if (!folded) {
      result.clear(); // nothing of the window is folded: all of it comes from the work table
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.windowLive)) {
      bindLive(ps, folded, at, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Counts c = counts(result, rs);
          long n = rs.getLong("n");
          if (rs.getString("state").equals("done")) {
            c.done += n;
            c.bins[rs.getInt("bin")] += n;
          } else {
            c.failures.merge(rs.getString("reason"), n, Long::sum);
          }
        }
      }
    }
    return result;
  }

  private static Counts counts(Map<Pair, Counts> result, ResultSet rs) throws SQLException {
    return result.computeIfAbsent(
        new Pair(rs.getString("queue"), rs.getString("kind")), p -> new Counts());
  }

  /**
   * Work done and failed per minute (start of the minute: {done, failed}), minutes without any
   * absent, in the transaction.
   */
  TreeMap<Instant, long[]> minutes(Connection tx, AdminSql sql, RollupSql rollup)
      throws SQLException {
    TreeMap<Instant, long[]> result = new TreeMap<>();
    OffsetDateTime at = null;
    String id = null;
    try (PreparedStatement ps = tx.prepareStatement(rollup.windowMinutes)) {
      ps.setObject(1, utc(rollupFrom));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          at = rs.getObject("last_completed_at", OffsetDateTime.class);
          id = rs.getString("last_work_id");
          Instant minute = AdminRows.instant(rs, "minute");
          if (minute != null) {
            addMinute(result, minute, rs.getLong("done"), rs.getLong("failed"));
          }
        }
      }
    }
    boolean folded = folded(at);
    if (!folded) {
      result.clear();
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.minutesLive)) {
      bindLive(ps, folded, at, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          addMinute(
              result, AdminRows.instant(rs, "minute"), rs.getLong("done"), rs.getLong("failed"));
        }
      }
    }
    return result;
  }

  private static void addMinute(TreeMap<Instant, long[]> m, Instant minute, long done, long fail) {
    long[] v = m.computeIfAbsent(minute, k -> new long[2]);
    v[0] += done;
    v[1] += fail;
  }

  /** Whether the fold has reached the rollup's first bucket of the window. */
  private boolean folded(OffsetDateTime at) {
    return at != null && !at.toInstant().isBefore(rollupFrom);
  }

  /**
   * The head {@code [start, rollupFrom)} and the tail after the fold's position; without folded
   * work, the head is the whole window and the tail empty.
   */
  private void bindLive(PreparedStatement ps, boolean folded, OffsetDateTime at, String id)
      throws SQLException {
    Instant past = end.plus(1, ChronoUnit.MICROS);
    ps.setObject(1, utc(start));
    ps.setObject(2, utc(folded ? rollupFrom : past));
    OffsetDateTime after = folded ? at : utc(past);
    ps.setObject(3, after);
    ps.setObject(4, after);
    ps.setString(5, folded ? id : "");
    ps.setObject(6, utc(end));
  }

  private static Instant ceil(Instant t, int spanSeconds) {
    long s = t.getEpochSecond();
    long floor = Math.floorDiv(s, spanSeconds) * spanSeconds;
    return Instant.ofEpochSecond(floor == s && t.getNano() == 0 ? floor : floor + spanSeconds);
  }

  private static OffsetDateTime utc(Instant t) {
    return t.atOffset(ZoneOffset.UTC);
  }
}
