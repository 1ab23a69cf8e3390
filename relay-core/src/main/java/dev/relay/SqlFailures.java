package dev.relay;

import dev.relay.internal.jdbc.SqlErrors;
import java.sql.SQLException;

/**
 * Relay's classification of a driver error by its SQLState (the table "SQLState classification" in
 * {@code docs/protocol.md}), for code that runs its own statements beside Relay's, such as Relay's
 * other modules or an application's repository, and wants the exception types Relay raises: a
 * {@link RetryableException} when repeating the transaction may succeed, a {@link
 * CommitOutcomeUnknownException} when the connection was lost during COMMIT, a plain {@link
 * RelayException} otherwise.
 */
public final class SqlFailures {
  private SqlFailures() {}

  /**
   * The error raised while doing {@code what} (not during COMMIT): a {@link RetryableException} for
   * a serialization failure, deadlock, lock or statement timeout, too many connections or a lost
   * connection; otherwise a {@link RelayException}. Both carry the SQLState and the driver error as
   * their cause.
   *
   * @param what what was being done, for the message ("registering schedules in schema relay")
   * @param e the driver error
   */
  public static RelayException of(String what, SQLException e) {
    return SqlErrors.translate(what, e);
  }

  /**
   * The error raised by the COMMIT of {@code what}: a {@link CommitOutcomeUnknownException} when
   * the connection was lost (the transaction may or may not have committed), otherwise as {@link
   * #of}.
   *
   * @param what what was being committed, for the message
   * @param e the driver error
   */
  public static RelayException ofCommit(String what, SQLException e) {
    return SqlErrors.translateCommit(what, e);
  }
}
