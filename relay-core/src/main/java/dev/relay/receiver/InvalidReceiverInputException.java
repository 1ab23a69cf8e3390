package dev.relay.receiver;

import dev.relay.RelayException;

/**
 * Receiver input refused before anything was sent to the database: an empty or oversized message
 * ID, consumer name or resource, invalid JSON, a negative token, a horizon out of range. Nothing
 * was written; the caller's transaction is untouched. An HTTP receiver answers it with 400: the
 * same request will never succeed.
 */
public final class InvalidReceiverInputException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String field;

  /**
   * @param field the offending input ({@code messageId}, {@code consumer}, {@code payload}, ...)
   * @param problem what is wrong, naming the allowed range
   */
  public InvalidReceiverInputException(String field, String problem) {
    super("invalid receiver input: " + field + " " + problem);
    this.field = field;
  }

  /** The name of the offending input. */
  public String field() {
    return field;
  }
}
