package dev.relay.app;

/**
 * A command that ends with a message and an exit code other than 0: refused ({@link
 * ExitCodes#REFUSED}) or not found. Printed as one line on stderr, never with a stack trace.
 */
final class CommandFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int exitCode;

  CommandFailure(int exitCode, String message) {
    super(message);
    this.exitCode = exitCode;
  }

  /** Refused, or not found: exit code 1. */
  static CommandFailure refused(String message) {
    return new CommandFailure(ExitCodes.REFUSED, message);
  }

  int exitCode() {
    return exitCode;
  }
}
