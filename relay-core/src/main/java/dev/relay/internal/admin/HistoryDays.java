package dev.relay.internal.admin;

import dev.relay.KindPolicy;
import dev.relay.RelayException;
import dev.relay.admin.PurgePolicy;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The day partitions of the history table (V25): maintenance creates today's and the next two days'
 * ahead of the completions that land in them, and retention retires a whole day at a time ({@code
 * retire_history_day}: the partition detached and dropped, in one short transaction per day; its
 * rows' tombstones were written when they finished) instead of deleting its rows one by one.
 *
 * <p>Rows of a day that had no partition when they finished wait in the default partition; they
 * must not escape retention. Creating their day's partition moves them into it ({@code
 * add_history_day}), after which they are retired with their day: maintenance does that for every
 * day it finds there, and retention for the days it is about to retire, so a purge run without
 * maintenance still retires them.
 *
 * <p>Both functions wait at most 5 s for their locks (the detach of a day waits for the readers and
 * writers of the history table in flight, and holds them up while it waits). A lock timeout ({@code
 * 55P03}) is not an error here: the step stops, and the next run tries again.
 */
public final class HistoryDays {
  private static final Logger log = LoggerFactory.getLogger(HistoryDays.class);

  /** The days after today whose partitions maintenance creates too (today's, then two more). */
  public static final int DAYS_AHEAD = 2;

  private static final String LOCK_NOT_AVAILABLE = "55P03";
  private static final String UNDEFINED_TABLE = "42P01";

  private final HistorySql sql;
  private final Timeouts timeouts;

  /** The days of {@code schema}'s history table. */
  public HistoryDays(SchemaName schema, Timeouts timeouts) {
    this.sql = HistorySql.of(schema);
    this.timeouts = timeouts;
  }

  /**
   * The edge of retention for whole days: a day is retired once it ended before {@code keepUntil},
   * that is, when it is before {@code firstKept}, the UTC day {@code keepUntil} falls in.
   */
  record Edge(OffsetDateTime keepUntil, LocalDate firstKept) {}

  /** What retiring did (or, for a dry run, would do): days, rows, and whether it got through. */
  record Retired(long days, long rows, boolean complete) {}

  /**
   * One maintenance step: creates today's partition and the next {@link #DAYS_AHEAD} days' (UTC, by
   * the database clock), then the partition of every day that has rows in the default partition,
   * each in a transaction of its own. Stops at a lock timeout; the next round continues.
   *
   * @return partitions created
   */
  public int addDays(Connection c) {
    int added = 0;
    try {
      for (int ahead = 0; ahead <= DAYS_AHEAD; ahead++) {
        added += add(c, "add history day ahead", sql.addDayAhead, ahead) ? 1 : 0;
      }
      for (LocalDate day : daysInDefault(c)) {
        added += add(c, "add history day", sql.addDay, day) ? 1 : 0;
      }
    } catch (RelayException e) {
      if (!LOCK_NOT_AVAILABLE.equals(e.sqlState())) {
        throw e;
      }
      log.info(
          "relay history partitions: lock timeout creating a day, retried next run: {}",
          e.getMessage());
    }
    return added;
  }

  /**
   * The edge of retention under {@code p}, on the database clock, read in the caller's transaction.
   */
  Edge edge(Connection tx, PurgePolicy p) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.keepUntil)) {
      ps.setLong(1, p.workRetention().toMillis());
      ps.setLong(2, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new Edge(rs.getObject(1, OffsetDateTime.class), rs.getObject(2, LocalDate.class));
      }
    }
  }

  /**
   * A dry run, in the caller's transaction: the days that would be retired now (with a partition,
   * or with rows only in the default partition) and their rows; changes nothing.
   */
  Retired count(Connection tx, Edge edge) throws SQLException {
    TreeSet<LocalDate> days = new TreeSet<>(partitionDaysBefore(tx, edge.firstKept()));
    days.addAll(before(daysInDefaultTx(tx), edge.firstKept()));
    try (PreparedStatement ps = tx.prepareStatement(sql.countBefore)) {
      ps.setObject(1, edge.firstKept());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new Retired(days.size(), rs.getLong(1), true);
      }
    }
  }

  /**
   * Retires the days that ended before the edge of retention under {@code p}, oldest first, at most
   * {@code maxDays}, one transaction each; the rows of such days still in the default partition
   * first get their day's partition. Incomplete when days are left over or a lock timeout stopped
   * it.
   */
  Retired retire(Connection c, PurgePolicy p, int maxDays) {
    Edge edge = Tx.run(c, timeouts, "history retention edge", tx -> edge(tx, p));
    return retire(c, edge, maxDays);
  }

  private Retired retire(Connection c, Edge edge, int maxDays) {
    long days = 0;
    long rows = 0;
    try {
      for (LocalDate day : before(daysInDefault(c), edge.firstKept())) {
        add(c, "add history day to retire", sql.addDay, day);
      }
      List<LocalDate> due =
          Tx.run(c, timeouts, "list history days", tx -> partitionDaysBefore(tx, edge.firstKept()));
      for (LocalDate day : due) {
        if (days == maxDays) {
          return new Retired(days, rows, false);
        }
        Long n = retireDay(c, day, edge);
        if (n != null) {
          days++;
          rows += n;
        }
      }
      return new Retired(days, rows, true);
    } catch (RelayException e) {
      if (!LOCK_NOT_AVAILABLE.equals(e.sqlState())) {
        throw e;
      }
      log.info(
          "relay history retention: lock timeout retiring a day, retried next run: {}",
          e.getMessage());
      return new Retired(days, rows, false);
    }
  }

  /**
   * One day: its partition dropped (a row found without its tombstone gets it first). {@code null}
   * when another purge retired it first (gone before this call, or dropped while this call waited
   * for its lock).
   */
  private Long retireDay(Connection c, LocalDate day, Edge edge) {
    try {
      return Tx.run(
          c,
          timeouts,
          "retire history day " + day,
          tx -> {
            try (PreparedStatement ps = tx.prepareStatement(sql.retireDay)) {
              ps.setObject(1, day);
              ps.setObject(2, edge.keepUntil());
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long n = rs.getLong(1);
                return rs.wasNull() ? null : n;
              }
            }
          });
    } catch (RelayException e) {
      if (UNDEFINED_TABLE.equals(e.sqlState())) {
        return null;
      }
      throw e;
    }
  }

  private boolean add(Connection c, String what, String query, Object param) {
    return Tx.run(
        c,
        timeouts,
        what,
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(query)) {
            ps.setObject(1, param);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getBoolean(1);
            }
          }
        });
  }

  /** The days with a partition before {@code firstKept}, oldest first. */
  private List<LocalDate> partitionDaysBefore(Connection tx, LocalDate firstKept)
      throws SQLException {
    List<LocalDate> days = new ArrayList<>();
    try (PreparedStatement ps = tx.prepareStatement(sql.partitionDaysBefore)) {
      ps.setObject(1, firstKept);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          days.add(rs.getObject(1, LocalDate.class));
        }
      }
    }
    return days;
  }

  /** The days with rows in the default partition, oldest first, in one transaction. */
  private List<LocalDate> daysInDefault(Connection c) {
    return Tx.run(c, timeouts, "find history days in the default partition", this::daysInDefaultTx);
  }

  /**
   * The days with rows in the default partition, oldest first: each stretch of days without a
   * partition read through the parent, which the planner narrows to the default partition.
   */
  private List<LocalDate> daysInDefaultTx(Connection tx) throws SQLException {
    List<LocalDate[]> gaps = new ArrayList<>();
    try (PreparedStatement ps = tx.prepareStatement(sql.gaps);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        gaps.add(
            new LocalDate[] {rs.getObject(1, LocalDate.class), rs.getObject(2, LocalDate.class)});
      }
    }
    TreeSet<LocalDate> days = new TreeSet<>();
    try (PreparedStatement ps = tx.prepareStatement(sql.daysInDefault)) {
      for (LocalDate[] gap : gaps) {
        ps.setObject(1, gap[0], Types.DATE);
        ps.setObject(2, gap[1], Types.DATE);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            days.add(rs.getObject(1, LocalDate.class));
          }
        }
      }
    }
    return List.copyOf(days);
  }

  private static List<LocalDate> before(List<LocalDate> days, LocalDate firstKept) {
    return days.stream().filter(d -> d.isBefore(firstKept)).toList();
  }
}
