package dev.relay.internal.admin;

import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.Pause;
import dev.relay.admin.PauseEvent;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Pause and resume: one row per pause in the {@code pause} table, which every claim reads, and one
 * audit row per call. A pause locks the table exclusively, so it commits only after every claim in
 * flight has committed, and no claim that commits later misses it.
 */
final class PauseOperation {
  private final PauseSql sql;
  private final Timeouts timeouts;
  private final SchemaName schema;

  PauseOperation(SchemaName schema, Timeouts timeouts) {
    this.sql = PauseSql.of(schema);
    this.timeouts = timeouts;
    this.schema = schema;
  }

  /**
   * Pauses (or renews the pause of) a target in one transaction: check the automatic resume on the
   * database clock, lock the pause table, store, audit.
   *
   * @throws InvalidAdminRequestException if {@code resumeAt} is not after the database clock's now
   */
  Pause pause(
      Connection c, String queue, String kind, String actor, String reason, Instant resumeAt) {
    return Tx.run(
        c,
        timeouts,
        "pause " + describe(queue, kind),
        tx -> {
          if (resumeAt != null) {
            try (PreparedStatement ps = tx.prepareStatement(sql.resumeAtPassed)) {
              setInstant(ps, 1, resumeAt);
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean("passed")) {
                  throw new InvalidAdminRequestException(
                      "resumeAt",
                      "is "
                          + resumeAt
                          + ", not after the database clock's now ("
                          + AdminRows.instant(rs, "now")
                          + "); give a time in the future, or none to pause until resumed");
                }
              }
            }
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.lockPauses)) {
            ps.execute();
          }
          Pause p;
          try (PreparedStatement ps = tx.prepareStatement(sql.pause)) {
            ps.setString(1, queue);
            ps.setString(2, kind);
            BoundText.bind(ps, 3, actor);
            BoundText.bind(ps, 4, reason);
            setInstant(ps, 5, resumeAt);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              p = pause(rs);
            }
          }
          audit(tx, "pause", queue, kind, actor, reason, resumeAt, p.pausedAt());
          return p;
        });
  }

  /**
   * Resumes a target in one transaction: delete its pause, audit, and wake the workers at commit
   * with the notification they already listen to. Returns the pause that held work, or empty when
   * none did (none stored, or one whose automatic resume had passed); audited either way.
   */
  Optional<Pause> resume(Connection c, String queue, String kind, String actor, String reason) {
    return Tx.run(
        c,
        timeouts,
        "resume " + describe(queue, kind),
        tx -> {
          Pause lifted = null;
          try (PreparedStatement ps = tx.prepareStatement(sql.resume)) {
            ps.setString(1, queue);
            ps.setString(2, kind);
            try (ResultSet rs = ps.executeQuery()) {
              if (rs.next() && rs.getBoolean("in_force")) {
                lifted = pause(rs);
              }
            }
          }
          audit(
              tx,
              "resume",
              queue,
              kind,
              actor,
              reason,
              lifted == null ? null : lifted.resumeAt(),
              lifted == null ? null : lifted.pausedAt());
          if (lifted != null) {
            notifyWorkers(tx);
          }
          return Optional.ofNullable(lifted);
        });
  }

  /** The pauses in force, by queue then kind. */
  List<Pause> active(Connection c) {
    return Tx.run(c, timeouts, "list pauses", this::inForce);
  }

  /** The pauses in force, read on a connection already in a transaction. */
  List<Pause> inForce(Connection tx) throws SQLException {
    List<Pause> result = new ArrayList<>();
    try (PreparedStatement ps = tx.prepareStatement(sql.active);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        result.add(pause(rs));
      }
    }
    return result;
  }

  /** The newest pause audit rows, newest first, at most {@code limit}. */
  List<PauseEvent> history(Connection c, int limit) {
    return Tx.run(
        c,
        timeouts,
        "pause history",
        tx -> {
          List<PauseEvent> result = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.history)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                result.add(
                    new PauseEvent(
                        rs.getString("action"),
                        rs.getString("queue"),
                        rs.getString("kind"),
                        rs.getString("actor"),
                        rs.getString("reason"),
                        AdminRows.instant(rs, "at"),
                        AdminRows.instant(rs, "resume_at"),
                        AdminRows.instant(rs, "paused_at")));
              }
            }
          }
          return result;
        });
  }

  /**
   * Removes pauses whose automatic resume has passed, audited as {@code auto_resume}, and wakes the
   * workers when there were any. Returns how many.
   */
  int expire(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "expire pauses",
        tx -> {
          int n;
          try (PreparedStatement ps = tx.prepareStatement(sql.expire)) {
            n = ps.executeUpdate();
          }
          if (n > 0) {
            notifyWorkers(tx);
          }
          return n;
        });
  }

  private void audit(
      Connection tx,
      String action,
      String queue,
      String kind,
      String actor,
      String reason,
      Instant resumeAt,
      Instant pausedAt)
      throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.audit)) {
      ps.setString(1, action);
      ps.setString(2, queue);
      ps.setString(3, kind);
      BoundText.bind(ps, 4, actor);
      BoundText.bind(ps, 5, reason);
      setInstant(ps, 6, resumeAt);
      setInstant(ps, 7, pausedAt);
      ps.executeUpdate();
    }
  }

  private void notifyWorkers(Connection tx) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(Coordination.NOTIFY)) {
      ps.setString(1, Coordination.channel(schema));
      ps.executeQuery().close();
    }
  }

  private static void setInstant(PreparedStatement ps, int index, Instant value)
      throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      ps.setObject(index, OffsetDateTime.ofInstant(value, ZoneOffset.UTC));
    }
  }

  private static Pause pause(ResultSet rs) throws SQLException {
    return new Pause(
        rs.getString("queue"),
        rs.getString("kind"),
        rs.getString("actor"),
        rs.getString("reason"),
        AdminRows.instant(rs, "paused_at"),
        AdminRows.instant(rs, "resume_at"));
  }

  private static String describe(String queue, String kind) {
    return new Pause(queue, kind, null, null, null, null).target();
  }
}
