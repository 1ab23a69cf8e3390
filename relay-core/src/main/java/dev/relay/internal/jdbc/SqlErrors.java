package dev.relay.internal.jdbc;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayException;
import dev.relay.RetryableException;
import java.sql.SQLException;

/** Translates driver errors into Relay's exception types at the edge of every operation. */
public final class SqlErrors {
  private SqlErrors() {}

  /** Whether a SQLState means "repeat the whole transaction and it may succeed". */
  public static boolean isRetryable(String sqlState) {
    if (sqlState == null) {
      return false;
    }
    return sqlState.equals("40001") // serialization_failure
        || sqlState.equals("40P01") // deadlock_detected
        || sqlState.equals("55P03") // lock_not_available (lock_timeout)
        || sqlState.equals("57P01") // admin_shutdown: the server is going away
        || sqlState.startsWith("08"); // connection exceptions
  }

  /** Whether a SQLState means the connection is gone. */
  public static boolean isConnectionLoss(String sqlState) {
    return sqlState != null && (sqlState.startsWith("08") || sqlState.equals("57P01"));
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
