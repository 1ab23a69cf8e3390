package dev.relay.internal.admin;

import dev.relay.KindPolicy;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Retention: purge finished work past its retention (leaving tombstones), expired tombstones, and
 * old history and audit rows, in bounded batches. Finished work in the history table goes a whole
 * day at a time ({@link HistoryDays}); finished rows left in the work table (by workers of earlier
 * releases, admin actions, cancels of ready work) are purged row by row.
 */
final class Retention {
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final HistoryDays historyDays;

  Retention(AdminSql sql, HistoryDays historyDays, Timeouts timeouts) {
    this.sql = sql;
    this.historyDays = historyDays;
    this.timeouts = timeouts;
  }

  /** Runs (or counts, for a dry run) every retention step in bounded batches. */
  public PurgeResult purge(Connection c, PurgePolicy p, boolean dryRun) {
    long retention = p.workRetention().toMillis();
    long defaultHorizon = KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis();
    long history = p.historyRetention().toMillis();
    // A tombstone outlives every schedule's catch-up window: a late slot enqueued again must meet
    // its tombstone, not run as new work (docs/scheduling.md, missed slots).
    long identity = Math.max(p.identityHorizon().toMillis(), longestCatchUpMillis(c));
    if (dryRun) {
      return Tx.run(
          c,
          timeouts,
          "purge (dry run)",
          tx -> {
            HistoryDays.Retired days = historyDays.count(tx, historyDays.edge(tx, p));
            long work = days.rows() + count(tx, sql.countPurgeableWork, retention, defaultHorizon);
            long tombs = count(tx, sql.countTombstones, identity);
            long attempts = count(tx, sql.countAttempts, history);
            long audits =
                count(tx, sql.countRedriveAudit, history)
                    + count(tx, sql.countCancelAudit, history)
                    + count(tx, sql.countSupersedes, history)
                    + count(tx, sql.countPurgeAudit, history)
                    + count(tx, sql.countPurgeItemAudit, history);
            return new PurgeResult(true, work, tombs, attempts, audits, true, days.days());
          });
    }
    // Whole days of the history table, each day one transaction and counted as one batch: the edge
    // is the longest of the retention and every horizon, since a day holds rows of every kind.
    HistoryDays.Retired days = historyDays.retire(c, p, p.maxBatches());
    boolean[] complete = {days.complete()};
    long work =
        days.rows()
            + batches(c, "purge work", sql.purgeWork, p, complete, retention, defaultHorizon);
    long tombs = batches(c, "purge tombstones", sql.purgeTombstones, p, complete, identity);
    // History after work: rows whose work was just purged become eligible in the same run.
    long attempts = batches(c, "purge attempts", sql.purgeAttempts, p, complete, history);
    long audits =
        batches(c, "purge redrive audit", sql.purgeRedriveAudit, p, complete, history)
            + batches(c, "purge cancel audit", sql.purgeCancelAudit, p, complete, history)
            + batches(c, "purge supersedes", sql.purgeSupersedes, p, complete, history)
            + batches(c, "purge purge audit", sql.purgePurgeAudit, p, complete, history)
            + batches(c, "purge purge item audit", sql.purgePurgeItemAudit, p, complete, history);
    return new PurgeResult(false, work, tombs, attempts, audits, complete[0], days.days());
  }

  /** The longest {@code each(window)} missed-slot window of the schedules in this schema, or 0. */
  private long longestCatchUpMillis(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "read catch-up windows",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.longestCatchUp);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
          }
        });
  }

  /**
   * Records who ran (or dry-ran) a purge, why, under which policy, and its result, in a transaction
   * of its own after the purge's batches (each committed on its own, so there is no one transaction
   * to join).
   */
  public void audit(Connection c, PurgePolicy p, PurgeResult r, String actor, String reason) {
    Tx.run(
        c,
        timeouts,
        "audit purge",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.auditPurge)) {
            BoundText.bind(ps, 1, actor);
            BoundText.bind(ps, 2, reason);
            ps.setBoolean(3, r.dryRun());
            ps.setString(4, p.toString());
            ps.setLong(5, r.work());
            ps.setLong(6, r.tombstones());
            ps.setLong(7, r.attempts());
            ps.setLong(8, r.audits());
            ps.setBoolean(9, r.complete());
            return ps.executeUpdate();
          }
        });
  }

  private long batches(
      Connection c, String what, String query, PurgePolicy p, boolean[] complete, long... params) {
    long total = 0;
    for (int b = 0; b < p.maxBatches(); b++) {
      int n =
          Tx.run(
              c,
              timeouts,
              what,
              tx -> {
                try (PreparedStatement ps = tx.prepareStatement(query)) {
                  int i = 1;
                  for (long v : params) {
                    ps.setLong(i++, v);
                  }
                  ps.setInt(i, p.batchSize());
                  return ps.executeUpdate();
                }
              });
      total += n;
      if (n < p.batchSize()) {
        return total;
      }
    }
    complete[0] = false;
    return total;
  }

  private static long count(Connection tx, String query, long... params) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(query)) {
      for (int i = 0; i < params.length; i++) {
        ps.setLong(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
