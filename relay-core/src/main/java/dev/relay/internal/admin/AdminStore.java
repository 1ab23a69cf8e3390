package dev.relay.internal.admin;

import dev.relay.CancelResult;
import dev.relay.EnqueueResult;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.admin.QueueHealth;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkNotFoundException;
import dev.relay.admin.WorkPage;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.SchemaName;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The admin operations on one connection each; {@link dev.relay.admin.Admin} validates the input
 * and hands over a connection. Every write is one short transaction of its own.
 */
public final class AdminStore {
  private final SchemaName schema;
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final WorkStore store;
  private final Outbox outbox;

  /** A store for {@code schema}. */
  public AdminStore(SchemaName schema, Timeouts timeouts) {
    this.schema = schema;
    this.timeouts = timeouts;
    this.sql = new AdminSql(schema);
    this.store = new WorkStore(schema, timeouts);
    this.outbox = Outbox.builder().schema(schema.sql()).build();
  }

  /** The maintenance lock statements, for {@link dev.relay.admin.Maintenance}. */
  public String tryMaintenanceLockSql() {
    return sql.tryMaintenanceLock;
  }

  /** See {@link #tryMaintenanceLockSql()}. */
  public String maintenanceUnlockSql() {
    return sql.maintenanceUnlock;
  }

  /** The schema name. */
  public SchemaName schema() {
    return schema;
  }

  // ---------------------------------------------------------------------------------- health

  /** Health per (queue, kind), measured at one instant of the database clock. */
  public List<QueueHealth> health(Connection c, Duration window) {
    return Tx.run(
        c,
        timeouts,
        "queue health",
        tx -> {
          List<Object[]> rows = new ArrayList<>();
          OffsetDateTime now = null;
          try (PreparedStatement ps = tx.prepareStatement(sql.health)) {
            ps.setLong(1, window.toMillis());
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                now = rs.getObject("now", OffsetDateTime.class);
                rows.add(
                    new Object[] {
                      rs.getString("queue"),
                      rs.getString("kind"),
                      rs.getLong("ready"),
                      rs.getLong("running"),
                      rs.getLong("done"),
                      rs.getLong("failed"),
                      rs.getLong("cancelled"),
                      seconds(rs, "oldest_eligible_s"),
                      rs.getLong("expired_leases"),
                      rs.getLong("completed_in_window"),
                      seconds(rs, "p50_s"),
                      seconds(rs, "p95_s"),
                      rs.getLong("blocked_keys")
                    });
              }
            }
          }
          Map<String, Map<String, Long>> failures = new HashMap<>();
          if (now != null) {
            try (PreparedStatement ps = tx.prepareStatement(sql.failuresByReason)) {
              ps.setObject(1, now);
              ps.setLong(2, window.toMillis());
              try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                  failures
                      .computeIfAbsent(
                          rs.getString("queue") + "\u0000" + rs.getString("kind"),
                          k -> new LinkedHashMap<>())
                      .put(rs.getString("reason"), rs.getLong("n"));
                }
              }
            }
          }
          List<QueueHealth> result = new ArrayList<>();
          for (Object[] r : rows) {
            Duration oldest = (Duration) r[7];
            result.add(
                new QueueHealth(
                    (String) r[0],
                    (String) r[1],
                    (Long) r[2],
                    (Long) r[3],
                    (Long) r[4],
                    (Long) r[5],
                    (Long) r[6],
                    oldest == null ? Duration.ZERO : oldest,
                    (Long) r[8],
                    (Long) r[12],
                    failures.getOrDefault(r[0] + "\u0000" + r[1], Map.of()),
                    (Long) r[9],
                    (Duration) r[10],
                    (Duration) r[11]));
          }
          return result;
        });
  }

  // ------------------------------------------------------------------------------------ list

  /** One page after {@code after} (or from the start when {@code null}). */
  public WorkPage list(Connection c, WorkFilter filter, Cursor after, int limit) {
    return Tx.run(
        c,
        timeouts,
        "list work",
        tx -> {
          List<WorkItem> items = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.listWork)) {
            int i = bindFilter(tx, ps, filter, after, null);
            ps.setInt(i, limit + 1);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                items.add(item(rs));
              }
            }
          }
          String next = null;
          if (items.size() > limit) {
            items.remove(limit);
            WorkItem last = items.get(limit - 1);
            next = new Cursor(last.createdAt(), last.workId()).encode();
          }
          return new WorkPage(items, next);
        });
  }

  /**
   * The IDs matching {@code filter} in one of {@code states}, oldest first, at most {@code limit}.
   */
  public List<String> select(Connection c, WorkFilter filter, List<String> states, int limit) {
    return Tx.run(
        c,
        timeouts,
        "select work",
        tx -> {
          List<String> ids = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.listWork)) {
            int i = bindFilter(tx, ps, filter, null, states);
            ps.setInt(i, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                ids.add(rs.getString("work_id"));
              }
            }
          }
          return ids;
        });
  }

  private static int bindFilter(
      Connection tx, PreparedStatement ps, WorkFilter f, Cursor after, List<String> states)
      throws SQLException {
    ps.setString(1, f.state());
    ps.setString(2, f.kind());
    ps.setString(3, f.queue());
    ps.setString(4, f.orderingKey());
    setMillis(ps, 5, f.olderThan());
    setMillis(ps, 6, f.newerThan());
    ps.setString(7, f.errorKind());
    ps.setString(8, f.outcome());
    if (after == null) {
      ps.setNull(9, Types.TIMESTAMP_WITH_TIMEZONE);
      ps.setNull(10, Types.VARCHAR);
    } else {
      ps.setString(9, after.createdAt().toString());
      ps.setString(10, after.workId());
    }
    if (states == null) {
      ps.setNull(11, Types.ARRAY);
    } else {
      ps.setArray(11, tx.createArrayOf("text", states.toArray()));
    }
    return 12;
  }

  private static void setMillis(PreparedStatement ps, int index, Duration d) throws SQLException {
    if (d == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, d.toMillis());
    }
  }

  // ------------------------------------------------------------------------------------ show

  /** One item with its history, or empty when no row has the ID. */
  public Optional<WorkDetail> show(Connection c, String workId) {
    return Tx.run(
        c,
        timeouts,
        "show " + workId,
        tx -> {
          WorkItem item;
          String payload;
          String result;
          String milestone;
          try (PreparedStatement ps = tx.prepareStatement(sql.showWork)) {
            ps.setString(1, workId);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return Optional.<WorkDetail>empty();
              }
              item = item(rs);
              payload = rs.getString("payload");
              result = rs.getString("result");
              milestone = rs.getString("milestone");
            }
          }
          List<WorkDetail.Attempt> attempts = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.showAttempts)) {
            ps.setString(1, workId);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                attempts.add(
                    new WorkDetail.Attempt(
                        rs.getLong("generation"),
                        rs.getString("worker"),
                        instant(rs, "claimed_at"),
                        instant(rs, "ended_at"),
                        rs.getString("ending"),
                        rs.getString("error_kind"),
                        rs.getString("error"),
                        rs.getString("outcome")));
              }
            }
          }
          List<WorkDetail.Redrive> redrives = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.showRedrives)) {
            ps.setString(1, workId);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                redrives.add(
                    new WorkDetail.Redrive(
                        rs.getString("actor"),
                        rs.getString("reason"),
                        instant(rs, "redriven_at"),
                        rs.getString("from_state"),
                        rs.getLong("from_generation"),
                        rs.getBoolean("forced")));
              }
            }
          }
          List<WorkDetail.Cancel> cancels = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.showCancels)) {
            ps.setString(1, workId);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                cancels.add(
                    new WorkDetail.Cancel(
                        rs.getString("actor"),
                        rs.getString("reason"),
                        instant(rs, "requested_at"),
                        rs.getString("from_state"),
                        rs.getString("result")));
              }
            }
          }
          List<WorkDetail.SupersedeLink> supersedes = links(tx, sql.showSupersedes, workId);
          List<WorkDetail.SupersedeLink> supersededBy = links(tx, sql.showSupersededBy, workId);
          return Optional.of(
              new WorkDetail(
                  item,
                  payload,
                  result,
                  milestone,
                  attempts,
                  redrives,
                  cancels,
                  supersedes,
                  supersededBy));
        });
  }

  private static List<WorkDetail.SupersedeLink> links(Connection tx, String query, String workId)
      throws SQLException {
    List<WorkDetail.SupersedeLink> links = new ArrayList<>();
    try (PreparedStatement ps = tx.prepareStatement(query)) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          links.add(
              new WorkDetail.SupersedeLink(
                  rs.getString("work_id"),
                  rs.getString("supersedes_work_id"),
                  rs.getString("actor"),
                  rs.getString("reason"),
                  instant(rs, "created_at")));
        }
      }
    }
    return links;
  }

  // --------------------------------------------------------------------------------- redrive

  /**
   * Redrives one item in its own transaction: lock the row, then (in later statements) sample the
   * clock, decide, update and audit. A refusal is returned, not thrown, and changes nothing.
   */
  public RedriveResult redrive(Connection c, String workId, RedriveRequest r) {
    return Tx.run(
        c,
        timeouts,
        "redrive " + workId,
        tx -> {
          String state;
          long generation;
          try (PreparedStatement ps = tx.prepareStatement(sql.lockWork)) {
            ps.setString(1, workId);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return null;
              }
              state = rs.getString("state");
              generation = rs.getLong("claim_generation");
            }
          }
          if (state.equals("running")) {
            return refused(
                workId,
                state,
                generation,
                RedriveRefusedException.Reason.RUNNING,
                "work '"
                    + workId
                    + "' is running (generation "
                    + generation
                    + "): its worker may have a call in flight; cancel it or wait for it to end",
                null,
                null);
          }
          boolean forced = false;
          if (!state.equals("failed")) {
            if (!r.force()) {
              return refused(
                  workId,
                  state,
                  generation,
                  RedriveRefusedException.Reason.NOT_FAILED,
                  "work '"
                      + workId
                      + "' is "
                      + state
                      + ", not failed; redriving it runs it again, so say so explicitly (force)",
                  null,
                  null);
            }
            forced = true;
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.horizon)) {
            ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
            ps.setString(2, workId);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              Instant now = instant(rs, "now");
              Instant first = instant(rs, "first_attempt_at");
              Instant end = instant(rs, "horizon_end");
              boolean registered = rs.getBoolean("registered");
              if (first != null && !end.isAfter(now)) {
                if (!r.overrideHorizon()) {
                  return refused(
                      workId,
                      state,
                      generation,
                      RedriveRefusedException.Reason.PAST_DEDUP_HORIZON,
                      "work '"
                          + workId
                          + "' was first attempted at "
                          + first
                          + "; the receiver's deduplication horizon"
                          + (registered
                              ? " registered for its kind"
                              : " (its kind has no registered policy: the default "
                                  + KindPolicy.DEFAULT_DEDUP_HORIZON
                                  + ")")
                          + " ended at "
                          + end
                          + ", before now ("
                          + now
                          + "), so the receiver may no longer recognise the ID and could apply"
                          + " it twice; override the horizon only if that is acceptable, or"
                          + " supersede it with new work",
                      first,
                      end);
                }
                forced = true;
              }
            }
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.redrive)) {
            ps.setString(1, workId);
            ps.executeUpdate();
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.auditRedrive)) {
            ps.setString(1, workId);
            BoundText.bind(ps, 2, r.actor());
            BoundText.bind(ps, 3, r.reason());
            ps.setString(4, state);
            ps.setLong(5, generation);
            ps.setBoolean(6, forced);
            ps.executeUpdate();
          }
          notifyWorkers(tx);
          return new RedriveResult(
              workId,
              RedriveResult.Status.REDRIVEN,
              state,
              generation,
              forced,
              null,
              null,
              null,
              null);
        });
  }

  private static RedriveResult refused(
      String workId,
      String state,
      long generation,
      RedriveRefusedException.Reason reason,
      String message,
      Instant first,
      Instant end) {
    return new RedriveResult(
        workId,
        RedriveResult.Status.REFUSED,
        state,
        generation,
        false,
        reason,
        message,
        first,
        end);
  }

  private void notifyWorkers(Connection tx) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.notify)) {
      ps.setString(1, "relay_" + schema.sql());
      ps.executeQuery().close();
    }
  }

  // ------------------------------------------------------------------------------- supersede

  /**
   * Enqueues the replacement, records the link and cancels the old work, in one transaction. The
   * old row is locked first, so a worker cannot finish it between the check and the cancel.
   */
  public SupersedeResult supersede(
      Connection c, String oldWorkId, Work replacement, String actor, String reason) {
    return Tx.run(
        c,
        timeouts,
        "supersede " + oldWorkId,
        tx -> {
          String state;
          try (PreparedStatement ps = tx.prepareStatement(sql.lockWork)) {
            ps.setString(1, oldWorkId);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                throw new WorkNotFoundException(oldWorkId);
              }
              state = rs.getString("state");
            }
          }
          List<WorkDetail.SupersedeLink> existing =
              links(tx, sql.showSupersedes, replacement.workId());
          EnqueueResult enqueued = outbox.enqueue(tx, replacement);
          if (!enqueued.inserted()) {
            if (existing.size() == 1 && existing.get(0).supersedesWorkId().equals(oldWorkId)) {
              return new SupersedeResult(
                  oldWorkId, replacement.workId(), CancelResult.Status.ALREADY_FINISHED, true);
            }
            throw new SupersedeRefusedException(
                oldWorkId,
                "cannot supersede '"
                    + oldWorkId
                    + "': the replacement ID '"
                    + replacement.workId()
                    + "' is already used by other work; a corrected intention needs a new ID");
          }
          if (state.equals("done")) {
            throw new SupersedeRefusedException(
                oldWorkId,
                "cannot supersede '"
                    + oldWorkId
                    + "': it is done, so its effect happened; a correction now is a compensation,"
                    + " new work with its own identity");
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.insertSupersedes)) {
            ps.setString(1, replacement.workId());
            ps.setString(2, oldWorkId);
            BoundText.bind(ps, 3, actor);
            BoundText.bind(ps, 4, reason);
            ps.executeUpdate();
          }
          WorkStore.CancelRow row =
              store.cancelInTransaction(
                  tx, oldWorkId, actor, "superseded by " + replacement.workId() + ": " + reason);
          return new SupersedeResult(
              oldWorkId, replacement.workId(), cancelStatus(row.result()), false);
        });
  }

  // ---------------------------------------------------------------------------------- cancel

  /** Cancels one item with the runtime's cancel; see {@link WorkStore#cancel}. */
  public CancelResult cancel(Connection c, String workId, String actor, String reason) {
    WorkStore.CancelRow row = store.cancel(c, workId, actor, reason);
    return new CancelResult(workId, cancelStatus(row.result()), row.fromState());
  }

  /** Maps the store's cancel result to the public status. */
  public static CancelResult.Status cancelStatus(String result) {
    switch (result) {
      case "cancelled":
        return CancelResult.Status.CANCELLED;
      case "cancel_requested":
        return CancelResult.Status.CANCEL_REQUESTED;
      case "already_finished":
        return CancelResult.Status.ALREADY_FINISHED;
      default:
        return CancelResult.Status.NOT_FOUND;
    }
  }

  // ----------------------------------------------------------------------------------- purge

  /** Runs (or counts, for a dry run) every retention step in bounded batches. */
  public PurgeResult purge(Connection c, PurgePolicy p, boolean dryRun) {
    long retention = p.workRetention().toMillis();
    long defaultHorizon = KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis();
    long history = p.historyRetention().toMillis();
    long identity = p.identityHorizon().toMillis();
    if (dryRun) {
      return Tx.run(
          c,
          timeouts,
          "purge (dry run)",
          tx -> {
            long work = count(tx, sql.countPurgeableWork, retention, defaultHorizon);
            long tombs = count(tx, sql.countTombstones, identity);
            long attempts = count(tx, sql.countAttempts, history);
            long audits =
                count(tx, sql.countRedriveAudit, history)
                    + count(tx, sql.countCancelAudit, history)
                    + count(tx, sql.countSupersedes, history);
            return new PurgeResult(true, work, tombs, attempts, audits, true);
          });
    }
    boolean[] complete = {true};
    long work = batches(c, "purge work", sql.purgeWork, p, complete, retention, defaultHorizon);
    long tombs = batches(c, "purge tombstones", sql.purgeTombstones, p, complete, identity);
    // History after work: rows whose work was just purged become eligible in the same run.
    long attempts = batches(c, "purge attempts", sql.purgeAttempts, p, complete, history);
    long audits =
        batches(c, "purge redrive audit", sql.purgeRedriveAudit, p, complete, history)
            + batches(c, "purge cancel audit", sql.purgeCancelAudit, p, complete, history)
            + batches(c, "purge supersedes", sql.purgeSupersedes, p, complete, history);
    return new PurgeResult(false, work, tombs, attempts, audits, complete[0]);
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

  // --------------------------------------------------------------------------------- helpers

  private static WorkItem item(ResultSet rs) throws SQLException {
    long seq = rs.getLong("sequence");
    Long sequence = rs.wasNull() ? null : seq;
    return new WorkItem(
        rs.getString("work_id"),
        rs.getString("kind"),
        rs.getString("queue"),
        rs.getString("state"),
        rs.getInt("priority"),
        rs.getLong("claim_generation"),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        instant(rs, "created_at"),
        instant(rs, "available_at"),
        instant(rs, "first_attempt_at"),
        rs.getString("claimed_by"),
        instant(rs, "lease_until"),
        instant(rs, "completed_at"),
        instant(rs, "deadline"),
        rs.getString("ordering_key"),
        sequence,
        rs.getString("last_error_kind"),
        rs.getString("last_error"),
        rs.getString("outcome"),
        rs.getString("receiver_ref"),
        instant(rs, "cancel_requested_at"));
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  private static Duration seconds(ResultSet rs, String column) throws SQLException {
    double s = rs.getDouble(column);
    if (rs.wasNull()) {
      return null;
    }
    return Duration.ofNanos(Math.round(s * 1_000_000_000d));
  }
}
