package dev.relay.internal.admin;

import dev.relay.FlowLimits;
import dev.relay.admin.CompletionMinute;
import dev.relay.admin.FailureGroup;
import dev.relay.admin.LimitUse;
import dev.relay.admin.RegisteredKind;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * The console's overview reads beside queue health: completions and failures per minute, failed
 * work grouped by reason, and the registered kinds. Each is one read-only statement through an
 * index (see {@link AdminSql}).
 */
final class OverviewQueries {
  private final AdminSql sql;
  private final RollupSql rollup;
  private final Timeouts timeouts;

  OverviewQueries(AdminSql sql, RollupSql rollup, Timeouts timeouts) {
    this.sql = sql;
    this.rollup = rollup;
    this.timeouts = timeouts;
  }

  /**
   * Every minute from the window's start (rounded down to the minute) to the current one, on one
   * sample of the database clock, counted by {@link FinishedWindow}: the rollup's 1-minute tier
   * where the fold has reached, the work table around it.
   */
  List<CompletionMinute> completionsPerMinute(Connection c, Duration window) {
    return Tx.run(
        c,
        timeouts,
        "completions per minute",
        tx -> {
          Instant now;
          try (PreparedStatement ps = tx.prepareStatement(sql.clock);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            now = AdminRows.instant(rs, "now");
          }
          Instant since = now.minus(window).truncatedTo(ChronoUnit.MINUTES);
          Instant last = now.truncatedTo(ChronoUnit.MINUTES);
          TreeMap<Instant, long[]> counted =
              new FinishedWindow(since, now, true).minutes(tx, sql, rollup);
          List<CompletionMinute> result = new ArrayList<>();
          for (Instant m = since; !m.isAfter(last); m = m.plus(1, ChronoUnit.MINUTES)) {
            long[] v = counted.getOrDefault(m, new long[2]);
            result.add(new CompletionMinute(m, v[0], v[1]));
          }
          return result;
        });
  }

  List<FailureGroup> failureGroups(Connection c, int limit) {
    return Tx.run(
        c,
        timeouts,
        "failure groups",
        tx -> {
          List<FailureGroup> result = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.failureGroups)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                result.add(
                    new FailureGroup(
                        rs.getString("queue"),
                        rs.getString("kind"),
                        rs.getString("reason"),
                        rs.getLong("n"),
                        AdminRows.instant(rs, "latest")));
              }
            }
          }
          return result;
        });
  }

  List<RegisteredKind> kinds(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "kinds",
        tx -> {
          List<RegisteredKind> result = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.kinds);
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              FlowLimits limits =
                  new FlowLimits(
                      integer(rs, "max_running"),
                      integer(rs, "max_running_per_group"),
                      integer(rs, "rate_limit"),
                      AdminRows.seconds(rs, "rate_interval_s"));
              result.add(
                  new RegisteredKind(
                      rs.getString("kind"),
                      AdminRows.seconds(rs, "backoff_base_s"),
                      AdminRows.seconds(rs, "backoff_cap_s"),
                      rs.getInt("max_attempts"),
                      AdminRows.seconds(rs, "max_elapsed_s"),
                      AdminRows.seconds(rs, "handler_timeout_s"),
                      AdminRows.seconds(rs, "dedup_horizon_s"),
                      rs.getString("unknown_outcome"),
                      limits.limited() ? limits : FlowLimits.NONE,
                      rs.getString("registered_by"),
                      AdminRows.instant(rs, "registered_at")));
            }
          }
          return result;
        });
  }

  List<LimitUse> limitUse(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "limit use",
        tx -> {
          List<LimitUse> result = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.limitUse);
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              List<LimitUse.GroupUse> groups = new ArrayList<>();
              java.sql.Array keys = rs.getArray("group_keys");
              java.sql.Array running = rs.getArray("group_running");
              if (keys != null && running != null) {
                String[] k = (String[]) keys.getArray();
                Long[] n = (Long[]) running.getArray();
                for (int i = 0; i < k.length; i++) {
                  groups.add(new LimitUse.GroupUse(k[i], n[i]));
                }
              }
              long claims = rs.getLong("window_claims");
              Long windowClaims = rs.wasNull() ? null : claims;
              result.add(
                  new LimitUse(
                      rs.getString("kind"),
                      new FlowLimits(
                          integer(rs, "max_running"),
                          integer(rs, "max_running_per_group"),
                          integer(rs, "rate_limit"),
                          AdminRows.seconds(rs, "rate_interval_s")),
                      rs.getLong("running"),
                      List.copyOf(groups),
                      windowClaims,
                      AdminRows.instant(rs, "at")));
            }
          }
          return result;
        });
  }

  private static Integer integer(ResultSet rs, String column) throws SQLException {
    int v = rs.getInt(column);
    return rs.wasNull() ? null : v;
  }
}
