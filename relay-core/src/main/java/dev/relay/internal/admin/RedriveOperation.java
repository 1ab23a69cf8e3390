package dev.relay.internal.admin;

import dev.relay.KindPolicy;
import dev.relay.WorkState;
import dev.relay.admin.RedrivePreview;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;

/**
 * Redrive: one item back to ready with a fresh attempt budget and retry window, after the checks
 * (state, the receiver's deduplication horizon) and with an audit row.
 */
final class RedriveOperation {
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final SchemaName schema;

  RedriveOperation(AdminSql sql, Timeouts timeouts, SchemaName schema) {
    this.sql = sql;
    this.timeouts = timeouts;
    this.schema = schema;
  }

  /**
   * Redrives one item in its own transaction: lock the row, then (in later statements) sample the
   * clock, decide, update and audit. A refusal is returned, not thrown, and changes nothing.
   */
  public RedriveResult redrive(Connection c, String workId, RedriveRequest r) {
    return Tx.run(c, timeouts, "redrive " + workId, tx -> redriveIn(tx, workId, r));
  }

  /**
   * {@link #redrive} inside a transaction the caller opened on {@code tx} (and commits): a bulk
   * redrive runs a batch of these in one transaction. {@code null} when no row has the ID.
   */
  RedriveResult redriveIn(Connection tx, String workId, RedriveRequest r) throws SQLException {
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
    if (state.equals(WorkState.RUNNING.sql())) {
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
    boolean restartHorizon = false;
    if (!state.equals(WorkState.FAILED.sql())) {
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
        Instant now = AdminRows.instant(rs, "now");
        Instant first = AdminRows.instant(rs, "first_attempt_at");
        Instant end = AdminRows.instant(rs, "horizon_end");
        Instant restarted = AdminRows.instant(rs, "horizon_start");
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
                    + (restarted != null
                        ? " (its horizon restarted by a redrive at " + restarted + ")"
                        : "")
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
          restartHorizon = true;
        }
      }
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.redrive)) {
      ps.setBoolean(1, restartHorizon);
      ps.setString(2, workId);
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
        workId, RedriveResult.Status.REDRIVEN, state, generation, forced, null, null, null, null);
  }

  /**
   * The redrive checks without the lock, for showing before acting; {@code null} when no row has
   * the ID.
   */
  public RedrivePreview preview(Connection c, String workId) {
    return Tx.run(
        c,
        timeouts,
        "redrive preview " + workId,
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.horizon)) {
            ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
            ps.setString(2, workId);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return null;
              }
              String state = rs.getString("state");
              Instant now = AdminRows.instant(rs, "now");
              Instant first = AdminRows.instant(rs, "first_attempt_at");
              Instant end = AdminRows.instant(rs, "horizon_end");
              boolean past = first != null && !end.isAfter(now);
              RedriveRefusedException.Reason refusal = null;
              if (state.equals(WorkState.RUNNING.sql())) {
                refusal = RedriveRefusedException.Reason.RUNNING;
              } else if (!state.equals(WorkState.FAILED.sql())) {
                refusal = RedriveRefusedException.Reason.NOT_FAILED;
              } else if (past) {
                refusal = RedriveRefusedException.Reason.PAST_DEDUP_HORIZON;
              }
              return new RedrivePreview(
                  workId,
                  state,
                  rs.getLong("claim_generation"),
                  now,
                  first,
                  end,
                  rs.getBoolean("registered"),
                  past,
                  refusal);
            }
          }
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
    try (PreparedStatement ps = tx.prepareStatement(Coordination.NOTIFY)) {
      ps.setString(1, Coordination.channel(schema));
      ps.executeQuery().close();
    }
  }
}
