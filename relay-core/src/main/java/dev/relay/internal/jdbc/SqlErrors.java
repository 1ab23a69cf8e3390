package dev.relay.internal.jdbc;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayException;
import dev.relay.RetryableException;
import java.sql.SQLException;

/**
 * Translates driver errors into Relay's exception types at the edge of every operation, following
 * the table "SQLState classification" at the end of {@code docs/protocol.md}: change both together.
 */
public final class SqlErrors {
  private SqlErrors() {}

  /** What Relay does with an error, by SQLState. */
  public enum Handling {
    /**
     * The transaction was rolled back by a transient condition (serialization failure, deadlock,
     * lock or statement timeout, too many connections): repeat it in a new transaction.
     */
    REPEAT,
    /**
     * The connection is gone (class 08, server shutdown, idle-in-transaction timeout): repeat on a
     * new connection; during COMMIT the outcome is unknown and must be re-read.
     */
    CONNECTION_LOST,
    /** Repeating cannot help (a constraint, bad data, a missing object, a bug): fail. */
    FAIL
  }

  /**
   * The handling of {@code sqlState} (null, as for a driver-side error, is {@link Handling#FAIL}).
   */
  public static Handling handling(String sqlState) {
    if (sqlState == null) {
      return Handling.FAIL;
    }
    if (sqlState.startsWith("08")) {
      return Handling.CONNECTION_LOST; // connection_exception and its subclasses
    }
    return switch (sqlState) {
      case "40001", // serialization_failure
          "40P01", // deadlock_detected
          "55P03", // lock_not_available: lock_timeout, NOWAIT
          "57014", // query_canceled: statement_timeout or a cancel request
          "53300" -> // too_many_connections
          Handling.REPEAT;
      case "57P01", // admin_shutdown: the server or an administrator ended the session
          "57P02", // crash_shutdown
          "57P03", // cannot_connect_now: the server is starting or stopping
          "25P03" -> // idle_in_transaction_session_timeout: the server closed the session
          Handling.CONNECTION_LOST;
      default -> Handling.FAIL;
    };
  }

  /** Whether a SQLState means "repeat the whole transaction and it may succeed". */
  public static boolean isRetryable(String sqlState) {
    return handling(sqlState) != Handling.FAIL;
  }

  /** Whether a SQLState means the connection is gone. */
  public static boolean isConnectionLoss(String sqlState) {
    return handling(sqlState) == Handling.CONNECTION_LOST;
  }

  /** Wraps a driver error raised while doing {@code what}. */
  public static RelayException translate(String what, SQLException e) {
    String state = e.getSQLState();
    String message = what + " failed: " + e.getMessage() + " (SQLState " + state + ")";
    if (isRetryable(state)) {
      return new RetryableException(message, state, e);
    }
    return new RelayException(message, state, e);
  }

  /** Wraps a driver error raised by COMMIT: a lost connection leaves the outcome unknown. */
  public static RelayException translateCommit(String what, SQLException e) {
    String state = e.getSQLState();
    if (isConnectionLoss(state)) {
      return new CommitOutcomeUnknownException(
          what + ": connection lost during COMMIT; the outcome is unknown, re-read before deciding",
          state,
          e);
    }
    return translate(what + " (commit)", e);
  }
}
