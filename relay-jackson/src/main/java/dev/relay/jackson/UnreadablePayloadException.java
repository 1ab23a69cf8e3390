package dev.relay.jackson;

import dev.relay.RelayException;

/**
 * A payload that cannot be read as the handler's type. Permanent: reading the same text again gives
 * the same error, so {@link JsonCodec#handler} turns it into a failed outcome, never a retry.
 */
public final class UnreadablePayloadException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String type;

  /**
   * Creates the exception.
   *
   * @param type the type the payload was read as
   * @param problem the parse error
   * @param cause Jackson's exception, or null
   */
  public UnreadablePayloadException(Class<?> type, String problem, Throwable cause) {
    super("unreadable payload: cannot read it as " + type.getName() + ": " + problem, null, cause);
    this.type = type.getName();
  }

  /** The fully qualified name of the type the payload was read as. */
  public String type() {
    return type;
  }
}
