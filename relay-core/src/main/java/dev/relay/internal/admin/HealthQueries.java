package dev.relay.internal.admin;

import dev.relay.admin.Pause;
import dev.relay.admin.QueueHealth;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Queue health: counts, ages, percentiles, failure reasons and blocked dependents per (queue,
 * kind), measured in one transaction on the database clock, and the refresh of the done/cancelled
 * summary.
 */
final class HealthQueries {
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final RollupSql rollup;
  private final PauseOperation pauses;

  HealthQueries(AdminSql sql, RollupSql rollup, Timeouts timeouts, PauseOperation pauses) {
    this.sql = sql;
    this.rollup = rollup;
    this.timeouts = timeouts;
    this.pauses = pauses;
  }

  /**
   * Health per (queue, kind), measured at one instant of the database clock; the window's
   * completions, percentiles and failures from {@link FinishedWindow} (the rollup and the work
   * table around it).
   */
  public List<QueueHealth> health(Connection c, Duration window) {
    return Tx.run(
        c,
        timeouts,
        "queue health",
        tx -> {
          OffsetDateTime now;
          try (PreparedStatement ps = tx.prepareStatement(sql.clock);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            now = rs.getObject("now", OffsetDateTime.class);
          }
          Instant end = now.toInstant();
          Map<FinishedWindow.Pair, FinishedWindow.Counts> finished =
              new FinishedWindow(end.minus(window), end, false).pairs(tx, sql, rollup);
          List<HealthRow> rows = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.health)) {
            ps.setObject(1, now);
            // the pairs with work finished in the window, as two arrays: queues and kinds
            List<FinishedWindow.Pair> pairs = List.copyOf(finished.keySet());
            ps.setArray(
                2,
                BoundText.textArray(
                    tx, pairs.stream().map(FinishedWindow.Pair::queue).toArray(String[]::new)));
            ps.setArray(
                3,
                BoundText.textArray(
                    tx, pairs.stream().map(FinishedWindow.Pair::kind).toArray(String[]::new)));
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                rows.add(
                    new HealthRow(
                        rs.getString("queue"),
                        rs.getString("kind"),
                        rs.getLong("ready"),
                        rs.getLong("running"),
                        rs.getLong("done"),
                        rs.getLong("failed"),
                        rs.getLong("cancelled"),
                        AdminRows.seconds(rs, "oldest_eligible_s"),
                        rs.getLong("expired_leases"),
                        rs.getLong("blocked_keys"),
                        AdminRows.instant(rs, "summary_as_of")));
              }
            }
          }
          Map<String, Map<String, Long>> blocked = new HashMap<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.blockedByReason);
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              blocked
                  .computeIfAbsent(
                      rs.getString("queue") + "\u0000" + rs.getString("kind"),
                      k -> new LinkedHashMap<>())
                  .put(rs.getString("reason"), rs.getLong("n"));
            }
          }
          List<Pause> inForce = pauses.inForce(tx);
          List<QueueHealth> result = new ArrayList<>();
          for (HealthRow r : rows) {
            FinishedWindow.Counts w =
                finished.getOrDefault(
                    new FinishedWindow.Pair(r.queue(), r.kind()), new FinishedWindow.Counts());
            result.add(
                new QueueHealth(
                    r.queue(),
                    r.kind(),
                    r.ready(),
                    r.running(),
                    r.done(),
                    r.failed(),
                    r.cancelled(),
                    r.oldestEligible() == null ? Duration.ZERO : r.oldestEligible(),
                    r.expiredLeases(),
                    r.blockedKeys(),
                    w.failures,
                    w.done,
                    LatencyHistogram.quantile(w.bins, 0.5),
                    LatencyHistogram.quantile(w.bins, 0.95),
                    r.summaryAsOf(),
                    blocked.getOrDefault(r.queue() + "\u0000" + r.kind(), Map.of()),
                    pausedSince(inForce, r.queue(), r.kind())));
          }
          return result;
        });
  }

  /** The start of the earliest pause in force that holds the pair, or {@code null}. */
  private static Instant pausedSince(List<Pause> inForce, String queue, String kind) {
    return inForce.stream()
        .filter(p -> p.holds(queue, kind))
        .map(Pause::pausedAt)
        .min(Instant::compareTo)
        .orElse(null);
  }

  /**
   * Recounts done and cancelled work per (queue, kind) into the summary, in one transaction:
   * readers see the previous counts until it commits. Returns when the counts were taken.
   */
  public Instant refreshSummary(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "refresh summary",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.lockSummary)) {
            ps.execute();
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.clearSummary)) {
            ps.executeUpdate();
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.refreshSummary);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            return AdminRows.instant(rs, "as_of");
          }
        });
  }

  /** One row of the health statement, before the failure reasons are joined to it. */
  private record HealthRow(
      String queue,
      String kind,
      long ready,
      long running,
      long done,
      long failed,
      long cancelled,
      Duration oldestEligible,
      long expiredLeases,
      long blockedKeys,
      Instant summaryAsOf) {}
}
