package dev.relay.internal.store;

import dev.relay.admin.Dependency;
import dev.relay.internal.jdbc.SchemaName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Reads what work waits for, for the admin API; never writes. */
public final class DependencyReader {
  private final DependencySql sql;

  /** A reader on {@code schema}. */
  public DependencyReader(SchemaName schema) {
    this.sql = DependencySql.of(schema);
  }

  /** The direct dependencies of {@code workId} in ID order; empty when it waits for nothing. */
  public List<Dependency> dependencies(Connection c, String workId) throws SQLException {
    List<Dependency> all = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql.statesOf)) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          all.add(row(rs));
        }
      }
    }
    return all;
  }

  /** The direct dependents of {@code workId} with their states, in ID order, at most limit. */
  public List<Dependency> dependents(Connection c, String workId, int limit) throws SQLException {
    List<Dependency> all = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql.dependentsOf)) {
      ps.setString(1, workId);
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          all.add(row(rs));
        }
      }
    }
    return all;
  }

  /** The nearest dependency, direct or through waiting work, that blocks {@code workId}. */
  public Optional<Dependency> blockedBy(Connection c, String workId) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.blockedBy)) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(row(rs)) : Optional.empty();
      }
    }
  }

  /**
   * The dependents of {@code workId} that wait (ready), directly or through other waiting
   * dependents, nearest first, at most {@code limit}.
   */
  public List<String> waitingDependents(Connection c, String workId, int limit)
      throws SQLException {
    List<String> ids = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql.waitingDependents)) {
      ps.setString(1, workId);
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getString(1));
        }
      }
    }
    return ids;
  }

  private static Dependency row(ResultSet rs) throws SQLException {
    return new Dependency(
        rs.getString("depends_on"), rs.getString("state"), rs.getBoolean("superseded"));
  }
}
