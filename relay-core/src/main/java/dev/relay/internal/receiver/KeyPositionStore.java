package dev.relay.internal.receiver;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The per-(consumer, key) position of ordered receivers ({@code receiver_key_position}), read and
 * written on the caller's connection inside the caller's transaction.
 */
public final class KeyPositionStore {
  private final KeyPositionSql sql;

  /** A store for {@code schema}. */
  public KeyPositionStore(SchemaName schema) {
    this.sql = KeyPositionSql.of(schema);
  }

  /** Locks the (consumer, key) row for this transaction and returns its position (0: none). */
  public long lock(Connection c, String consumer, String key) {
    try (PreparedStatement ps = c.prepareStatement(sql.lock)) {
      ps.setString(1, consumer);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("locking the position of " + consumer + "/" + key, e);
    }
  }

  /** Sets the position of a row this transaction locked. */
  public void move(Connection c, String consumer, String key, long position) {
    try (PreparedStatement ps = c.prepareStatement(sql.move)) {
      ps.setLong(1, position);
      ps.setString(2, consumer);
      ps.setString(3, key);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw SqlErrors.translate("moving the position of " + consumer + "/" + key, e);
    }
  }
}
