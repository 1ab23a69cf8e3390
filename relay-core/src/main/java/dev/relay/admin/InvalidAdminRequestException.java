package dev.relay.admin;

import dev.relay.RelayException;

/**
 * An admin call was refused before anything was sent: an empty actor or reason, a limit out of
 * range, an unknown state in a filter, a malformed cursor. Nothing changed.
 */
public final class InvalidAdminRequestException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String field;

  /**
   * @param field the offending argument
   * @param problem what is wrong, naming the allowed range
   */
  public InvalidAdminRequestException(String field, String problem) {
    super("invalid admin request: " + field + " " + problem);
    this.field = field;
  }

  /** The offending argument. */
  public String field() {
    return field;
  }
}
