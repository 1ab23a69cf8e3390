package dev.relay.internal.receiver;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.receiver.FenceResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/** The fence's and the token counter's statements, on the caller's connection and transaction. */
public final class FenceStore {
  private final FenceSql sql;

  /** A store for {@code schema}. */
  public FenceStore(SchemaName schema) {
    this.sql = FenceSql.of(schema);
  }

  /** Accepts {@code token} for {@code resource} when it is not lower than the highest seen. */
  public FenceResult advance(Connection c, String resource, long token) {
    try {
      try (PreparedStatement ps = c.prepareStatement(sql.advance)) {
        ps.setString(1, resource);
        ps.setLong(2, token);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return new FenceResult(resource, token, true, rs.getLong(1));
          }
        }
      }
      // Refused: the conflicting row is locked by our statement now, so this read is current.
      try (PreparedStatement ps = c.prepareStatement(sql.highest)) {
        ps.setString(1, resource);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return new FenceResult(resource, token, false, rs.getLong(1));
        }
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("fence " + resource + " token " + token, e);
    }
  }

  /** The next token of {@code resource}'s counter. */
  public long nextToken(Connection c, String resource) {
    try (PreparedStatement ps = c.prepareStatement(sql.nextToken)) {
      ps.setString(1, resource);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("allocating a fencing token for " + resource, e);
    }
  }
}
