package dev.relay.receiver;

import dev.relay.RelayException;

/**
 * An effect threw a checked exception (unchecked ones pass through unchanged). The inbox record of
 * the message was written in the same transaction: <b>roll back</b>, and the message counts as
 * never received, so a later repeat runs the effect again.
 */
public final class EffectFailedException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String consumer;
  private final String messageId;

  /**
   * @param consumer the consumer whose effect failed
   * @param messageId the message being applied
   * @param cause what the effect threw
   */
  public EffectFailedException(String consumer, String messageId, Throwable cause) {
    super(
        "effect of consumer "
            + consumer
            + " failed for message '"
            + messageId
            + "': "
            + cause
            + "; roll back the transaction",
        null,
        cause);
    this.consumer = consumer;
    this.messageId = messageId;
  }

  /** The consumer whose effect failed. */
  public String consumer() {
    return consumer;
  }

  /** The message being applied. */
  public String messageId() {
    return messageId;
  }
}
