package dev.relay.internal.admin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * An item's row locked in the work table ({@link AdminSql#lockWork}), as every operator's write on
 * one item (a redrive, a supersede, a purge of one item) takes it first: its state and generation,
 * as of the lock.
 *
 * <p>Finished work that a worker moved to the history table (V25) is not in the work table, so
 * {@link #lock} does not find it. {@link #reopenAndLock} moves it back first, unchanged, in the
 * same transaction, and then locks it there, so the write goes on exactly as for a finished row an
 * older worker or an operator left in the work table. Only work the action will change should be
 * moved: the callers judge a history row where it is first (it never changes in place), so a
 * refusal leaves it there.
 *
 * @param state the state under the lock
 * @param generation the claim generation under the lock
 */
record LockedWork(String state, long generation) {
  /** Locks {@code workId}'s row in the work table; {@code null} when it is not there. */
  static LockedWork lock(Connection tx, AdminSql sql, String workId) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.lockWork)) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? new LockedWork(rs.getString("state"), rs.getLong("claim_generation"))
            : null;
      }
    }
  }

  /**
   * Moves {@code workId} back from the history table into the work table when it is there ({@link
   * AdminSql#reopenHistory}), then locks it in the work table; {@code null} when it is in neither
   * (never enqueued, or its day was retired meanwhile). A concurrent move of the same row waits for
   * this transaction and then finds nothing to move.
   */
  static LockedWork reopenAndLock(Connection tx, AdminSql sql, String workId) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.reopenHistory)) {
      ps.setArray(1, tx.createArrayOf("text", new String[] {workId}));
      ps.executeQuery().close();
    }
    return lock(tx, sql, workId);
  }
}
