package dev.relay.internal.admin;

import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reading statement plans for the plan tests: EXPLAIN ANALYZE text and what it says of the work
 * table.
 */
final class Plans {
  private static final String EXPLAIN = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ";
  private static final Pattern ROWS = Pattern.compile("actual rows=([\\d.]+) loops=(\\d+)");
  private static final Pattern REMOVED = Pattern.compile("Rows Removed by \\w+: (\\d+)");

  private Plans() {}

  /** Sets a statement's parameters. */
  interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  /** Sets one branch's parameters from {@code first} on; returns the next index. */
  interface BranchBinder {
    int bind(PreparedStatement ps, int first) throws SQLException;
  }

  /**
   * Binds a page over the work table and the history table ({@code AdminSql.pageOfBoth}): {@code
   * branch} binds one branch's filter and limit, once per branch, then the outer limit.
   */
  static Binder page(int limit, BranchBinder branch) {
    return ps -> {
      int p = 1;
      for (int b = 0; b < AdminSql.PAGE_BRANCHES; b++) {
        p = branch.bind(ps, p);
      }
      ps.setInt(p, limit);
    };
  }

  /** The EXPLAIN ANALYZE text of {@code query}, run in a transaction that is rolled back. */
  static String explain(TestDatabase db, String query, Binder binder) throws SQLException {
    List<String> plan = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + query)) {
        binder.bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.add(rs.getString(1));
          }
        }
      }
      c.rollback();
    }
    return String.join("\n", plan);
  }

  /**
   * The most rows any one node reading the work table or a partition of the history table produced
   * or filtered out, over all its loops (PostgreSQL 18 prints fractional average rows per loop; 15
   * prints whole ones).
   */
  static long maxWorkTableRows(String text) {
    long max = 0;
    String[] lines = text.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String l = lines[i];
      if (!(l.contains(" on outbox ") || l.contains(" on work_history"))
          || l.contains("Bitmap Index Scan")) {
        continue;
      }
      Matcher m = ROWS.matcher(l);
      long rows =
          m.find() ? Math.round(Double.parseDouble(m.group(1)) * Long.parseLong(m.group(2))) : 0;
      long removed = 0;
      for (int j = i + 1; j < lines.length && lines[j].trim().indexOf("->") != 0; j++) {
        Matcher rm = REMOVED.matcher(lines[j]);
        if (rm.find()) {
          removed += Long.parseLong(rm.group(1));
        }
      }
      max = Math.max(max, rows + removed);
    }
    return max;
  }
}
