package dev.relay.app;

/**
 * The database cannot be reached or started: the command exits with {@link ExitCodes#UNAVAILABLE}.
 */
final class DatabaseUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  DatabaseUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
