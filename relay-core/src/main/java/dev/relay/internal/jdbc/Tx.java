package dev.relay.internal.jdbc;

import dev.relay.TransactionRequiredException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Runs one of Relay's own short transactions on a connection: begin, apply the timeouts, run the
 * body, commit. A lost connection during COMMIT becomes {@link
 * dev.relay.CommitOutcomeUnknownException}, never a guess. The connection's auto-commit mode is
 * restored afterwards, so it can go back to a pool unchanged.
 */
public final class Tx {
  private Tx() {}

  /** The body of a transaction. */
  @FunctionalInterface
  public interface Body<T> {
    /** Runs the statements; the connection is in a transaction. */
    T run(Connection c) throws SQLException;
  }

  /** Runs {@code body} in its own transaction and commits; {@code what} names it in errors. */
  public static <T> T run(Connection c, Timeouts timeouts, String what, Body<T> body) {
    if (!requireOpen(c)) {
      // A caller's open transaction would be committed with ours; refuse before touching it (no
      // rollback, no change of mode: the caller's transaction stays exactly as it was).
      throw new TransactionRequiredException(
          what + " runs its own transaction: pass a connection in auto-commit mode");
    }
    T result;
    try {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute(timeouts.setLocalSql());
      }
      result = body.run(c);
    } catch (SQLException e) {
      rollbackQuietly(c);
      restore(c);
      throw SqlErrors.translate(what, e);
    } catch (RuntimeException e) {
      rollbackQuietly(c);
      restore(c);
      throw e;
    }
    try {
      c.commit();
    } catch (SQLException e) {
      rollbackQuietly(c);
      restore(c);
      throw SqlErrors.translateCommit(what, e);
    }
    restore(c);
    return result;
  }

  /** Checks that {@code c} is usable and returns its auto-commit mode. */
  public static boolean requireOpen(Connection c) {
    if (c == null) {
      throw new TransactionRequiredException("connection is null");
    }
    try {
      if (c.isClosed()) {
        throw new TransactionRequiredException("connection is closed");
      }
      return c.getAutoCommit();
    } catch (SQLException e) {
      throw SqlErrors.translate("checking the connection", e);
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      if (!c.isClosed()) {
        c.rollback();
      }
    } catch (SQLException ignored) {
      // The connection is broken; the server rolls back an unfinished transaction by itself.
    }
  }

  private static void restore(Connection c) {
    try {
      if (!c.isClosed()) {
        c.setAutoCommit(true);
      }
    } catch (SQLException ignored) {
      // Broken connection: the pool discards it.
    }
  }
}
