package dev.relay.internal.admin;

import dev.relay.admin.WorkItem;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;

/** Row mapping shared by the admin operations. */
final class AdminRows {
  private AdminRows() {}

  static WorkItem item(ResultSet rs) throws SQLException {
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

  static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  static Duration seconds(ResultSet rs, String column) throws SQLException {
    double s = rs.getDouble(column);
    if (rs.wasNull()) {
      return null;
    }
    return Duration.ofNanos(Math.round(s * 1_000_000_000d));
  }
}
