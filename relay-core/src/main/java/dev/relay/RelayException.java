package dev.relay;

/**
 * The root of every error Relay raises. Unchecked: a caller that wants to treat all of Relay's
 * refusals alike catches this type; one that needs the details catches a subclass, each of which
 * carries the context that names the problem (the work ID, the setting, the SQLState).
 *
 * <p>{@link #isRetryable()} says whether the same call may succeed if repeated in a new transaction
 * (a serialization failure, a deadlock, a lock timeout, a lost connection). It never means that the
 * first call had no effect.
 */
public class RelayException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String sqlState;

  /** An error with a message and no database cause. */
  public RelayException(String message) {
    this(message, null, null);
  }

  /** An error caused by another, usually a driver error, with its SQLState if it had one. */
  public RelayException(String message, String sqlState, Throwable cause) {
    super(message, cause);
    this.sqlState = sqlState;
  }

  /** The SQLState of the database error behind this one, or {@code null}. */
  public String sqlState() {
    return sqlState;
  }

  /** Whether repeating the whole transaction may succeed; see the class comment. */
  public boolean isRetryable() {
    return false;
  }
}
