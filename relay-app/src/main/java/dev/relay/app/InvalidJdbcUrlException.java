package dev.relay.app;

/**
 * The database refused a connection for a value its URL gives (SQLState 22023: a parameter pgjdbc
 * checks only as it connects, or an {@code options=-c} setting the server does not take): a usage
 * error (exit 2) naming the URL, its password masked, not an unavailable database.
 */
final class InvalidJdbcUrlException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  InvalidJdbcUrlException(String message, Throwable cause) {
    super(message, cause);
  }
}
