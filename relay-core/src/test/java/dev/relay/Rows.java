package dev.relay;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** Small JDBC helpers for tests: read rows as maps, run statements. */
public final class Rows {
  private Rows() {}

  /** All rows of {@code sql} (with {@code {schema}} replaced) as column-name maps. */
  public static List<Map<String, Object>> query(
      DataSource ds, String schema, String sql, Object... params) {
    try (Connection c = ds.getConnection()) {
      return query(c, schema, sql, params);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  public static List<Map<String, Object>> query(
      Connection c, String schema, String sql, Object... params) {
    try (PreparedStatement ps = c.prepareStatement(sql.replace("{schema}", schema))) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      List<Map<String, Object>> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        while (rs.next()) {
          Map<String, Object> row = new LinkedHashMap<>();
          for (int i = 1; i <= md.getColumnCount(); i++) {
            row.put(md.getColumnLabel(i), rs.getObject(i));
          }
          rows.add(row);
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The single row of {@code work_id} in the outbox, or {@code null}. */
  public static Map<String, Object> work(DataSource ds, String schema, String workId) {
    List<Map<String, Object>> rows =
        query(ds, schema, "SELECT * FROM {schema}.work WHERE work_id = ?", workId);
    return rows.isEmpty() ? null : rows.get(0);
  }

  public static long count(DataSource ds, String schema, String sql, Object... params) {
    return ((Number) query(ds, schema, sql, params).get(0).values().iterator().next()).longValue();
  }

  public static int update(Connection c, String schema, String sql, Object... params) {
    try (PreparedStatement ps = c.prepareStatement(sql.replace("{schema}", schema))) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  public static int update(DataSource ds, String schema, String sql, Object... params) {
    try (Connection c = ds.getConnection()) {
      return update(c, schema, sql, params);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
