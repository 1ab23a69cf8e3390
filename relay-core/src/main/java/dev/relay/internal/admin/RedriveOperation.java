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
   *
   * <p>Finished work that a worker moved to the history table is judged there first, by the same
   * checks, so a refusal leaves it where it is; work that passes is moved back to the work table
   * ({@link LockedWork#reopenAndLock}) and then locked and redriven there as any finished row.
   */
  RedriveResult redriveIn(Connection tx, String workId, RedriveRequest r) throws SQLException {
    LockedWork row = LockedWork.lock(tx, sql, workId);
    if (row == null) {
      // Not in the work table: in the history table (done or cancelled), or nowhere.
      try (PreparedStatement ps = tx.prepareStatement(sql.previewHorizon)) {
        bindHorizon(ps, workId);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return null;
          }
          String state = rs.getString("state");
          long generation = rs.getLong("claim_generation");
          RedriveResult refusal = stateRefusal(workId, state, generation, r);
          if (refusal == null) {
            refusal = horizonRefusal(workId, state, generation, Horizon.of(rs), r);
          }
          if (refusal != null) {
            return refusal;
          }
        }
      }
      row = LockedWork.reopenAndLock(tx, sql, workId);
      if (row == null) {
        return null; // its day was retired meanwhile: purged
      }
    }
    String state = row.state();
    long generation = row.generation();
    RedriveResult refusal = stateRefusal(workId, state, generation, r);
    if (refusal != null) {
      return refusal;
    }
    boolean forced = !state.equals(WorkState.FAILED.sql());
    boolean restartHorizon = false;
    try (PreparedStatement ps = tx.prepareStatement(sql.horizon)) {
      bindHorizon(ps, workId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        Horizon h = Horizon.of(rs);
        refusal = horizonRefusal(workId, state, generation, h, r);
        if (refusal != null) {
          return refusal;
        }
        if (h.past()) {
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

  private static void bindHorizon(PreparedStatement ps, String workId) throws SQLException {
    ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
    ps.setString(2, workId);
  }

  /** What {@link AdminSql#horizon} read: the clock and the item's deduplication horizon. */
  private record Horizon(
      Instant now, Instant first, Instant end, Instant restarted, boolean registered) {
    static Horizon of(ResultSet rs) throws SQLException {
      return new Horizon(
          AdminRows.instant(rs, "now"),
          AdminRows.instant(rs, "first_attempt_at"),
          AdminRows.instant(rs, "horizon_end"),
          AdminRows.instant(rs, "horizon_start"),
          rs.getBoolean("registered"));
    }

    /** The horizon has passed since the first attempt (or the redrive that restarted it). */
    boolean past() {
      return first != null && !end.isAfter(now);
    }
  }

  /**
   * The state checks, in the order a redrive makes them: running work is refused, work that is not
   * failed unless forced; {@code null} when they pass.
   */
  private static RedriveResult stateRefusal(
      String workId, String state, long generation, RedriveRequest r) {
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
    if (!state.equals(WorkState.FAILED.sql()) && !r.force()) {
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
    return null;
  }

  /** The horizon check: refused past the horizon unless overridden; {@code null} otherwise. */
  private static RedriveResult horizonRefusal(
      String workId, String state, long generation, Horizon h, RedriveRequest r) {
    if (!h.past() || r.overrideHorizon()) {
      return null;
    }
    return refused(
        workId,
        state,
        generation,
        RedriveRefusedException.Reason.PAST_DEDUP_HORIZON,
        "work '"
            + workId
            + "' was first attempted at "
            + h.first()
            + (h.restarted() != null
                ? " (its horizon restarted by a redrive at " + h.restarted() + ")"
                : "")
            + "; the receiver's deduplication horizon"
            + (h.registered()
                ? " registered for its kind"
                : " (its kind has no registered policy: the default "
                    + KindPolicy.DEFAULT_DEDUP_HORIZON
                    + ")")
            + " ended at "
            + h.end()
            + ", before now ("
            + h.now()
            + "), so the receiver may no longer recognise the ID and could apply"
            + " it twice; override the horizon only if that is acceptable, or"
            + " supersede it with new work",
        h.first(),
        h.end());
  }

  /**
   * The redrive checks without the lock, for showing before acting; {@code null} when no row has
   * the ID. Finished work in the history table is found there.
   */
  public RedrivePreview preview(Connection c, String workId) {
    return Tx.run(
        c,
        timeouts,
        "redrive preview " + workId,
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.previewHorizon)) {
            bindHorizon(ps, workId);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return null;
              }
              String state = rs.getString("state");
              Horizon h = Horizon.of(rs);
              RedriveRefusedException.Reason refusal = null;
              if (state.equals(WorkState.RUNNING.sql())) {
                refusal = RedriveRefusedException.Reason.RUNNING;
              } else if (!state.equals(WorkState.FAILED.sql())) {
                refusal = RedriveRefusedException.Reason.NOT_FAILED;
              } else if (h.past()) {
                refusal = RedriveRefusedException.Reason.PAST_DEDUP_HORIZON;
              }
              return new RedrivePreview(
                  workId,
                  state,
                  rs.getLong("claim_generation"),
                  h.now(),
                  h.first(),
                  h.end(),
                  h.registered(),
                  h.past(),
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
