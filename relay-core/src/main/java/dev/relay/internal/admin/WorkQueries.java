package dev.relay.internal.admin;

import dev.relay.admin.PayloadSearch;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkPage;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reading work: a filtered page in keyset order, the IDs an operation over a filter touches, and
 * one item with its whole history.
 */
final class WorkQueries {
  private final Timeouts timeouts;
  private final AdminSql sql;

  WorkQueries(AdminSql sql, Timeouts timeouts) {
    this.sql = sql;
    this.timeouts = timeouts;
  }

  /** One page after {@code after} (or from the start when {@code null}). */
  public WorkPage list(Connection c, WorkFilter filter, Cursor after, int limit) {
    return Tx.run(
        c,
        timeouts,
        "list work",
        tx -> {
          List<WorkItem> items = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(listStatement(filter))) {
            bindPage(tx, ps, 1, backlog(filter), filter, after, null, limit + 1);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                items.add(AdminRows.item(rs));
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
   * The list statement for {@code filter}: through the claim index when it asks for ready or
   * running work (unfinished work is the newest, and walking the creation order from the oldest row
   * would pass every finished row first), the creation-order walk of both tables otherwise.
   */
  private String listStatement(WorkFilter filter) {
    return backlog(filter) ? sql.listBacklog : sql.listWork;
  }

  /** Whether {@code filter} asks for ready or running work: {@link AdminSql#listBacklog}. */
  private static boolean backlog(WorkFilter filter) {
    return "ready".equals(filter.state()) || "running".equals(filter.state());
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
          try (PreparedStatement ps = tx.prepareStatement(listStatement(filter))) {
            bindPage(tx, ps, 1, backlog(filter), filter, null, states, limit);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                ids.add(rs.getString("work_id"));
              }
            }
          }
          return ids;
        });
  }

  /**
   * The newest items matching {@code filter} (kind, queue, state and the age window only) whose
   * payload contains {@code json}, among at most {@code scanCap} newest items of the window.
   */
  public PayloadSearch searchPayload(
      Connection c, WorkFilter filter, String json, int scanCap, int limit) {
    return Tx.run(
        c,
        timeouts,
        "search payloads",
        tx -> {
          List<WorkItem> items = new ArrayList<>();
          long scanned = 0;
          try (PreparedStatement ps = tx.prepareStatement(sql.searchPayload)) {
            int i = bindWindow(ps, filter, scanCap);
            i = twice(ps, i, filter.kind());
            i = twice(ps, i, filter.queue());
            i = twice(ps, i, filter.state());
            ps.setString(i++, json);
            ps.setInt(i, limit + 1);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                items.add(AdminRows.item(rs));
                scanned = rs.getLong("scanned");
              }
            }
          }
          if (items.isEmpty()) {
            // No match: how many were read still matters (all of the window, or the cap).
            scanned = countWindow(tx, filter, scanCap);
          }
          boolean more = items.size() > limit;
          if (more) {
            items.remove(limit);
          }
          return new PayloadSearch(List.copyOf(items), scanned, scanned >= scanCap, more);
        });
  }

  private long countWindow(Connection tx, WorkFilter filter, int scanCap) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.searchPayload)) {
      int i = bindWindow(ps, filter, scanCap);
      for (int k = 0; k < 6; k++) {
        ps.setNull(i++, Types.VARCHAR);
      }
      ps.setString(i++, "{}"); // every payload contains the empty object
      ps.setInt(i, 1);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong("scanned") : 0;
      }
    }
  }

  /** Binds a payload search's window and cap; returns the next parameter's index. */
  private static int bindWindow(PreparedStatement ps, WorkFilter filter, int scanCap)
      throws SQLException {
    setMillis(ps, 1, filter.newerThan());
    setMillis(ps, 2, filter.olderThan());
    setMillis(ps, 3, filter.olderThan());
    ps.setInt(4, scanCap);
    return 5;
  }

  /**
   * Binds a page of the filter from parameter {@code first} on: for {@link AdminSql#listBacklog}
   * ({@code backlog}) the filter and the limit; for a page over both tables ({@link
   * AdminSql#listWork}, {@link AdminSql#bulkCandidates}) the filter and the limit of each branch,
   * then the outer limit. Returns the next parameter's index.
   */
  static int bindPage(
      Connection tx,
      PreparedStatement ps,
      int first,
      boolean backlog,
      WorkFilter f,
      Cursor after,
      List<String> states,
      int limit)
      throws SQLException {
    int i = first;
    for (int b = 0; b < (backlog ? 1 : AdminSql.PAGE_BRANCHES); b++) {
      i = bindFilter(tx, ps, i, f, after, states);
      ps.setInt(i++, limit);
    }
    if (!backlog) {
      ps.setInt(i++, limit);
    }
    return i;
  }

  /**
   * Binds the filter (each criterion twice; see AdminSql's filter) from parameter {@code first} on;
   * returns the limit's index.
   */
  private static int bindFilter(
      Connection tx,
      PreparedStatement ps,
      int first,
      WorkFilter f,
      Cursor after,
      List<String> states)
      throws SQLException {
    int i = first;
    i = twice(ps, i, f.state());
    i = twice(ps, i, f.kind());
    i = twice(ps, i, f.queue());
    i = twice(ps, i, f.orderingKey());
    setMillis(ps, i++, f.olderThan());
    setMillis(ps, i++, f.olderThan());
    setMillis(ps, i++, f.newerThan());
    setMillis(ps, i++, f.newerThan());
    i = twice(ps, i, f.errorKind());
    i = twice(ps, i, f.outcome());
    // blocked work: a LIKE pattern over the derived reason ('dependency%' for any reason)
    String blocked =
        !f.blockedOnly() ? null : f.blockedReason() != null ? f.blockedReason() : "dependency%";
    i = twice(ps, i, blocked);
    if (after == null) {
      ps.setNull(i++, Types.TIMESTAMP_WITH_TIMEZONE);
      ps.setNull(i++, Types.TIMESTAMP_WITH_TIMEZONE);
      ps.setNull(i++, Types.VARCHAR);
    } else {
      ps.setString(i++, after.createdAt().toString());
      ps.setString(i++, after.createdAt().toString());
      ps.setString(i++, after.workId());
    }
    if (states == null) {
      ps.setNull(i++, Types.ARRAY);
      ps.setNull(i++, Types.ARRAY);
    } else {
      java.sql.Array a = tx.createArrayOf("text", states.toArray());
      ps.setArray(i++, a);
      ps.setArray(i++, a);
    }
    return i;
  }

  private static int twice(PreparedStatement ps, int i, String value) throws SQLException {
    ps.setString(i, value);
    ps.setString(i + 1, value);
    return i + 2;
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
              item = AdminRows.item(rs);
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
                        AdminRows.instant(rs, "claimed_at"),
                        AdminRows.instant(rs, "ended_at"),
                        rs.getString("ending"),
                        rs.getString("error_kind"),
                        rs.getString("error"),
                        rs.getString("outcome"),
                        rs.getString("action"),
                        rs.getString("receiver_ref")));
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
                        AdminRows.instant(rs, "redriven_at"),
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
                        AdminRows.instant(rs, "requested_at"),
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

  static List<WorkDetail.SupersedeLink> links(Connection tx, String query, String workId)
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
                  AdminRows.instant(rs, "created_at")));
        }
      }
    }
    return links;
  }
}
