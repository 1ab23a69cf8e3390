package dev.relay.internal.jdbc;

import dev.relay.TransactionRequiredException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
    return runWith(c, timeouts.setLocalSql(), what, body);
  }

  /**
   * As {@link #run}, for a body whose first statement carries the timeouts itself ({@link
   * #withTimeouts}), so that they travel in the same round trip as that statement instead of one of
   * their own: the hot paths (claim, settle) save a round trip per transaction. The body must send
   * {@link #withTimeouts} first, before anything that could wait.
   */
  public static <T> T runTimeoutsInBody(Connection c, String what, Body<T> body) {
    return runWith(c, null, what, body);
  }

  /**
   * {@code statements}, each a statement of its own, behind the timeouts' {@code SET LOCAL}s, as
   * one text that a single {@code execute} sends in one round trip (the server still runs them one
   * after the other: a later statement starts only when the one before it finished). Read the first
   * of {@code statements}' results with {@link #firstResult}.
   */
  public static String withTimeouts(Timeouts timeouts, String... statements) {
    return timeouts.setLocalSql() + ";\n" + String.join(";\n", statements);
  }

  /**
   * Executes a {@link #withTimeouts} statement and returns the result set of its first statement
   * after the timeouts; {@link PreparedStatement#getMoreResults()} moves to the next one's.
   */
  public static ResultSet firstResult(PreparedStatement ps) throws SQLException {
    boolean rows = ps.execute();
    for (int i = 0; i < Timeouts.SET_LOCAL_STATEMENTS; i++) {
      if (rows) {
        throw new SQLException("a SET LOCAL returned rows");
      }
      rows = ps.getMoreResults();
    }
    return nextResult(ps, rows);
  }

  /** The next statement's result set of a multi-statement execute. */
  public static ResultSet nextResult(PreparedStatement ps) throws SQLException {
    return nextResult(ps, ps.getMoreResults());
  }

  private static ResultSet nextResult(PreparedStatement ps, boolean rows) throws SQLException {
    if (!rows) {
      throw new SQLException("the statement returned no rows where a result set was expected");
    }
    return ps.getResultSet();
  }

  private static <T> T runWith(Connection c, String setLocalSql, String what, Body<T> body) {
    if (!requireOpen(c)) {
      // A caller's open transaction would be committed with ours; refuse before touching it (no
      // rollback, no change of mode: the caller's transaction stays exactly as it was).
      throw new TransactionRequiredException(
          what + " runs its own transaction: pass a connection in auto-commit mode");
    }
    T result;
    try {
      c.setAutoCommit(false);
      if (setLocalSql != null) {
        try (Statement s = c.createStatement()) {
          s.execute(setLocalSql);
        }
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
