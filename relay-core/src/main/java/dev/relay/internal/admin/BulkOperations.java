package dev.relay.internal.admin;

import dev.relay.CancelResult;
import dev.relay.KindPolicy;
import dev.relay.WorkState;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkCounts;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.BulkProgress;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import dev.relay.admin.WorkFilter;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * Redrive, cancel and purge over many items, in bounded batches: each batch is one transaction that
 * takes each item's row lock and checks it exactly as the single-item action does ({@link
 * RedriveOperation#redriveIn}, {@link WorkStore#cancelInTransaction}; a purge as the retention
 * purge judges an item, {@link AdminSql#purgeItem}), with one audit row per item. The filtered
 * forms of {@code Admin.redrive} and {@code Admin.cancel} (and so {@code relay redrive} and {@code
 * relay cancel} with filters) run their selected IDs through {@link #redrive} and {@link #cancel};
 * a stored bulk action ({@code bulk_operation}) also moves its cursor and counts in the batch's
 * transaction, so what it reports is exactly what was committed.
 */
final class BulkOperations {
  private final AdminSql sql;
  private final Timeouts timeouts;
  private final RedriveOperation redrive;
  private final WorkStore store;

  BulkOperations(AdminSql sql, Timeouts timeouts, RedriveOperation redrive, WorkStore store) {
    this.sql = sql;
    this.timeouts = timeouts;
    this.redrive = redrive;
    this.store = store;
  }

  /** What happens to one item. */
  enum Fate {
    CHANGED,
    REQUESTED,
    REFUSED_RUNNING,
    REFUSED_HORIZON,
    REFUSED_STATE,
    GONE
  }

  /**
   * What the action would do to an item in {@code state}, in the order the single-item action
   * checks: the preview's judgement, made again under the row lock by the run. {@code pastHorizon}:
   * the kind's deduplication horizon has passed since the first attempt (a redrive's test); {@code
   * endedWithinHorizon}: the item ended less than that horizon ago (a purge's test).
   */
  static Fate judge(
      BulkAction action,
      boolean force,
      String state,
      boolean pastHorizon,
      boolean endedWithinHorizon) {
    if (action == BulkAction.PURGE) {
      if (state.equals(WorkState.RUNNING.sql())) {
        return Fate.REFUSED_RUNNING;
      }
      if (!state.equals(WorkState.DONE.sql()) && !state.equals(WorkState.CANCELLED.sql())) {
        return Fate.REFUSED_STATE;
      }
      return endedWithinHorizon ? Fate.REFUSED_HORIZON : Fate.CHANGED;
    }
    if (action == BulkAction.CANCEL) {
      if (state.equals(WorkState.READY.sql()) || state.equals(WorkState.FAILED.sql())) {
        return Fate.CHANGED;
      }
      return state.equals(WorkState.RUNNING.sql()) ? Fate.REQUESTED : Fate.REFUSED_STATE;
    }
    if (state.equals(WorkState.RUNNING.sql())) {
      return Fate.REFUSED_RUNNING;
    }
    if (!force && !state.equals(WorkState.FAILED.sql())) {
      return Fate.REFUSED_STATE;
    }
    return pastHorizon ? Fate.REFUSED_HORIZON : Fate.CHANGED;
  }

  /** Counts of fates, added up. */
  static final class Tally {
    long handled;
    final long[] fates = new long[Fate.values().length];

    void add(Fate f) {
      handled++;
      fates[f.ordinal()]++;
    }

    long get(Fate f) {
      return fates[f.ordinal()];
    }

    BulkCounts counts() {
      return new BulkCounts(
          handled,
          get(Fate.CHANGED),
          get(Fate.REQUESTED),
          get(Fate.REFUSED_RUNNING),
          get(Fate.REFUSED_HORIZON),
          get(Fate.REFUSED_STATE),
          get(Fate.GONE));
    }
  }

  /** Redrives {@code ids} in batches of {@code batch}, each batch one transaction. */
  List<RedriveResult> redrive(Connection c, List<String> ids, RedriveRequest r, int batch) {
    List<RedriveResult> results = new ArrayList<>();
    for (int from = 0; from < ids.size(); from += batch) {
      List<String> part = ids.subList(from, Math.min(ids.size(), from + batch));
      results.addAll(
          Tx.run(
              c,
              timeouts,
              "redrive a batch of " + part.size(),
              tx -> {
                List<RedriveResult> done = new ArrayList<>();
                for (String id : part) {
                  RedriveResult one = redrive.redriveIn(tx, id, r);
                  if (one != null) {
                    done.add(one); // null: purged meanwhile
                  }
                }
                return done;
              }));
    }
    return results;
  }

  /** Cancels {@code ids} in batches of {@code batch}, each batch one transaction. */
  List<CancelResult> cancel(
      Connection c, List<String> ids, String actor, String reason, int batch) {
    List<CancelResult> results = new ArrayList<>();
    for (int from = 0; from < ids.size(); from += batch) {
      List<String> part = ids.subList(from, Math.min(ids.size(), from + batch));
      results.addAll(
          Tx.run(
              c,
              timeouts,
              "cancel a batch of " + part.size(),
              tx -> {
                List<CancelResult> done = new ArrayList<>();
                for (String id : part) {
                  WorkStore.CancelRow row = store.cancelInTransaction(tx, id, actor, reason);
                  done.add(
                      new CancelResult(id, AdminStore.cancelStatus(row.result()), row.fromState()));
                }
                return done;
              }));
    }
    return results;
  }

  /** Counts what the action would do to the filter's items now, at most {@code cap} of them. */
  BulkPreview preview(Connection c, WorkFilter filter, BulkAction action, boolean force, int cap) {
    return Tx.run(
        c,
        timeouts,
        "bulk preview",
        tx -> {
          Tally t = new Tally();
          try (PreparedStatement ps = tx.prepareStatement(sql.bulkPreview)) {
            WorkQueries.bindPage(tx, ps, bindHorizons(ps), false, filter, null, null, cap + 1);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                Fate f =
                    judge(
                        action,
                        force,
                        rs.getString("state"),
                        rs.getBoolean("past_horizon"),
                        rs.getBoolean("ended_within_horizon"));
                long n = rs.getLong("n");
                t.handled += n;
                t.fates[f.ordinal()] += n;
              }
            }
          }
          boolean capped = t.handled > cap;
          if (capped) {
            // One row too many was read to know; the counts stay those of what was read.
            t.handled = cap;
          }
          return new BulkPreview(action, force, t.counts(), capped);
        });
  }

  /** Stores a new bulk action, running, with nothing done yet. */
  BulkProgress start(
      Connection c, WorkFilter f, BulkAction action, boolean force, String actor, String reason) {
    return Tx.run(
        c,
        timeouts,
        "start a bulk " + action.sql(),
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.insertBulk)) {
            int i = 1;
            ps.setString(i++, action.sql());
            ps.setBoolean(i++, force);
            ps.setString(i++, f.state());
            ps.setString(i++, f.kind());
            ps.setString(i++, f.queue());
            ps.setString(i++, f.orderingKey());
            setMillis(ps, i++, f.olderThan());
            setMillis(ps, i++, f.newerThan());
            ps.setString(i++, f.errorKind());
            ps.setString(i++, f.outcome());
            ps.setBoolean(i++, f.blockedOnly());
            ps.setString(i++, f.blockedReason());
            BoundText.bind(ps, i++, actor);
            BoundText.bind(ps, i, reason);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return progress(rs);
            }
          }
        });
  }

  /**
   * Runs the next batch of a bulk action in one transaction: lock its row (a second runner waits,
   * then continues after this batch), select the next items after its cursor created before it
   * started, apply the action to each under its row lock, and move the cursor and counts. Returns
   * the progress after the batch; one that is no longer running is returned unchanged.
   */
  BulkProgress runBatch(Connection c, long id, int batch) {
    return Tx.run(
        c,
        timeouts,
        "bulk batch of " + id,
        tx -> {
          BulkProgress p;
          Cursor after;
          try (PreparedStatement ps = tx.prepareStatement(sql.lockBulk)) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return null;
              }
              p = progress(rs);
              Instant at = AdminRows.instant(rs, "after_created_at");
              after = at == null ? null : new Cursor(at, rs.getString("after_work_id"));
            }
          }
          if (!p.running()) {
            return p;
          }
          List<Cursor> items = new ArrayList<>();
          boolean last = false;
          try (PreparedStatement ps = tx.prepareStatement(sql.bulkCandidates)) {
            WorkQueries.bindPage(tx, ps, bindHorizons(ps), false, p.filter(), after, null, batch);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                Instant created = AdminRows.instant(rs, "created_at");
                if (created.isAfter(p.createdAt())) {
                  last = true; // created after the bulk action started: not part of it
                  break;
                }
                items.add(new Cursor(created, rs.getString("work_id")));
              }
            }
          }
          last = last || items.size() < batch;
          Tally t = new Tally();
          RedriveRequest request = new RedriveRequest(p.actor(), p.reason(), p.force(), false);
          for (Cursor item : items) {
            t.add(apply(tx, p, item.workId(), request));
          }
          Cursor end = items.isEmpty() ? null : items.get(items.size() - 1);
          try (PreparedStatement ps = tx.prepareStatement(sql.bulkProgress)) {
            int i = 1;
            if (end == null) {
              ps.setNull(i++, Types.TIMESTAMP_WITH_TIMEZONE);
              ps.setNull(i++, Types.VARCHAR);
            } else {
              ps.setObject(i++, OffsetDateTime.ofInstant(end.createdAt(), ZoneOffset.UTC));
              ps.setString(i++, end.workId());
            }
            ps.setLong(i++, t.handled);
            for (Fate f :
                List.of(
                    Fate.CHANGED,
                    Fate.REQUESTED,
                    Fate.REFUSED_RUNNING,
                    Fate.REFUSED_HORIZON,
                    Fate.REFUSED_STATE,
                    Fate.GONE)) {
              ps.setLong(i++, t.get(f));
            }
            ps.setBoolean(i++, last);
            ps.setBoolean(i++, last);
            ps.setLong(i, id);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return progress(rs);
            }
          }
        });
  }

  /** Binds the default horizon of {@link AdminSql#bulkCandidates}' two tests; the next index. */
  private static int bindHorizons(PreparedStatement ps) throws SQLException {
    ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
    ps.setLong(2, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
    return 3;
  }

  private Fate apply(Connection tx, BulkProgress p, String workId, RedriveRequest request)
      throws SQLException {
    if (p.action() == BulkAction.PURGE) {
      return purge(tx, p, workId);
    }
    if (p.action() == BulkAction.CANCEL) {
      return switch (store.cancelInTransaction(tx, workId, p.actor(), p.reason()).result()) {
        case "cancelled" -> Fate.CHANGED;
        case "cancel_requested" -> Fate.REQUESTED;
        case "already_finished" -> Fate.REFUSED_STATE;
        default -> Fate.GONE;
      };
    }
    RedriveResult r = redrive.redriveIn(tx, workId, request);
    if (r == null) {
      return Fate.GONE;
    }
    if (r.redriven()) {
      return Fate.CHANGED;
    }
    return r.refusal() == RedriveRefusedException.Reason.RUNNING
        ? Fate.REFUSED_RUNNING
        : r.refusal() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON
            ? Fate.REFUSED_HORIZON
            : Fate.REFUSED_STATE;
  }

  /**
   * Purges one item of bulk action {@code p} in the batch's transaction: lock its row (waiting for
   * a worker or an enqueue that holds it, within the lock timeout), judge its state, and only then,
   * in a later statement that samples the clock, tombstone, audit and delete it if it ended longer
   * ago than its kind's horizon. Finished work that a worker moved to the history table is judged
   * there first (a refusal leaves it in place) and moved back to be purged from the work table as
   * any finished row ({@link LockedWork}).
   */
  private Fate purge(Connection tx, BulkProgress p, String workId) throws SQLException {
    LockedWork row = LockedWork.lock(tx, sql, workId);
    if (row == null) {
      try (PreparedStatement ps = tx.prepareStatement(sql.previewHorizon)) {
        ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
        ps.setString(2, workId);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return Fate.GONE;
          }
          Fate f =
              judge(
                  BulkAction.PURGE,
                  false,
                  rs.getString("state"),
                  false,
                  rs.getBoolean("ended_within_horizon"));
          if (f != Fate.CHANGED) {
            return f;
          }
        }
      }
      row = LockedWork.reopenAndLock(tx, sql, workId);
      if (row == null) {
        return Fate.GONE; // its day was retired meanwhile
      }
    }
    Fate f = judge(BulkAction.PURGE, false, row.state(), false, false);
    if (f != Fate.CHANGED) {
      return f;
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.purgeItem)) {
      ps.setString(1, workId);
      ps.setLong(2, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
      ps.setLong(3, p.id());
      BoundText.bind(ps, 4, p.actor());
      BoundText.bind(ps, 5, p.reason());
      return ps.executeUpdate() == 1 ? Fate.CHANGED : Fate.REFUSED_HORIZON;
    }
  }

  /** A bulk action's row, or {@code null}. */
  BulkProgress get(Connection c, long id) {
    return Tx.run(
        c,
        timeouts,
        "bulk " + id,
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.bulk)) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next() ? progress(rs) : null;
            }
          }
        });
  }

  /** The newest bulk actions, newest first. */
  List<BulkProgress> recent(Connection c, int limit) {
    return Tx.run(
        c,
        timeouts,
        "recent bulk actions",
        tx -> {
          List<BulkProgress> result = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.recentBulks)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                result.add(progress(rs));
              }
            }
          }
          return result;
        });
  }

  private static BulkProgress progress(ResultSet rs) throws SQLException {
    WorkFilter f = WorkFilter.all();
    if (rs.getString("f_state") != null) {
      f = f.state(rs.getString("f_state"));
    }
    if (rs.getString("f_kind") != null) {
      f = f.kind(rs.getString("f_kind"));
    }
    if (rs.getString("f_queue") != null) {
      f = f.queue(rs.getString("f_queue"));
    }
    if (rs.getString("f_ordering_key") != null) {
      f = f.orderingKey(rs.getString("f_ordering_key"));
    }
    long older = rs.getLong("f_older_than_ms");
    if (!rs.wasNull()) {
      f = f.olderThan(Duration.ofMillis(older));
    }
    long newer = rs.getLong("f_newer_than_ms");
    if (!rs.wasNull()) {
      f = f.newerThan(Duration.ofMillis(newer));
    }
    if (rs.getString("f_error_kind") != null) {
      f = f.errorKind(rs.getString("f_error_kind"));
    }
    if (rs.getString("f_outcome") != null) {
      f = f.outcome(rs.getString("f_outcome"));
    }
    if (rs.getString("f_blocked_reason") != null) {
      f = f.blockedReason(rs.getString("f_blocked_reason"));
    } else if (rs.getBoolean("f_blocked_only")) {
      f = f.blocked();
    }
    return new BulkProgress(
        rs.getLong("id"),
        BulkAction.of(rs.getString("action")),
        rs.getBoolean("force"),
        f,
        rs.getString("actor"),
        rs.getString("reason"),
        rs.getString("state"),
        AdminRows.instant(rs, "created_at"),
        AdminRows.instant(rs, "updated_at"),
        AdminRows.instant(rs, "finished_at"),
        rs.getLong("batches"),
        new BulkCounts(
            rs.getLong("handled"),
            rs.getLong("changed"),
            rs.getLong("requested"),
            rs.getLong("refused_running"),
            rs.getLong("refused_horizon"),
            rs.getLong("refused_state"),
            rs.getLong("gone")));
  }

  private static void setMillis(PreparedStatement ps, int index, Duration d) throws SQLException {
    if (d == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, d.toMillis());
    }
  }
}
