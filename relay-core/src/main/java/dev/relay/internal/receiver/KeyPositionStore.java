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
  /**
   * Creates the row at position 0 (nothing applied) if missing, and locks it either way; returns
   * the position. ON CONFLICT DO UPDATE locks the latest version of an existing row, so a
   * concurrent delivery for the same key waits here until the first commits or rolls back.
   */
  private final String lock;

  /** Moves the locked row to a new position. */
  private final String move;

  /** A store for {@code schema}. */
  public KeyPositionStore(SchemaName schema) {
    lock =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.receiver_key_position AS r (consumer, ordering_key, position)
            VALUES (?, ?, 0)
                ON CONFLICT (consumer, ordering_key) DO UPDATE SET position = r.position
            RETURNING position""");
    move =
        schema.inject(
            """
            UPDATE ${relay_schema}.receiver_key_position
               SET position = ?, updated_at = clock_timestamp()
             WHERE consumer = ? AND ordering_key = ?""");
  }

  /** Locks the (consumer, key) row for this transaction and returns its position (0: none). */
  public long lock(Connection c, String consumer, String key) {
    try (PreparedStatement ps = c.prepareStatement(lock)) {
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
    try (PreparedStatement ps = c.prepareStatement(move)) {
      ps.setLong(1, position);
      ps.setString(2, consumer);
      ps.setString(3, key);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw SqlErrors.translate("moving the position of " + consumer + "/" + key, e);
    }
  }
}
