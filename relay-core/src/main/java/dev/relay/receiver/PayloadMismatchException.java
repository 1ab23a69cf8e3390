package dev.relay.receiver;

import dev.relay.RelayException;

/**
 * A message ID (or request key) arrived again with a payload that is not jsonb-equal to the one
 * recorded at its first delivery. The inbox never applies the second payload and never returns the
 * first one's result for it: the sender reused an ID for a different intention, which is a bug to
 * investigate (a corrected intention needs a new ID). Nothing was changed by the refused call; the
 * caller should roll back its transaction. An HTTP receiver answers it with 422.
 */
public final class PayloadMismatchException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String consumer;
  private final String messageId;
  private final String storedPayloadDigest;
  private final String requestedPayloadDigest;

  /**
   * @param consumer the consumer (or request scope) the ID belongs to
   * @param messageId the contested message ID
   * @param storedPayloadDigest hex SHA-256 of the recorded payload in canonical form
   * @param requestedPayloadDigest hex SHA-256 of the refused payload in canonical form
   */
  public PayloadMismatchException(
      String consumer,
      String messageId,
      String storedPayloadDigest,
      String requestedPayloadDigest) {
    super(
        "message '"
            + messageId
            + "' of consumer "
            + consumer
            + " was first delivered with payload sha256:"
            + storedPayloadDigest
            + " and now arrives with a different payload sha256:"
            + requestedPayloadDigest
            + "; refused: an ID names one intention, a corrected one needs a new ID");
    this.consumer = consumer;
    this.messageId = messageId;
    this.storedPayloadDigest = storedPayloadDigest;
    this.requestedPayloadDigest = requestedPayloadDigest;
  }

  /** The consumer (or request scope). */
  public String consumer() {
    return consumer;
  }

  /** The contested message ID. */
  public String messageId() {
    return messageId;
  }

  /** Hex SHA-256 of the recorded payload (canonical form; equal for jsonb-equal payloads). */
  public String storedPayloadDigest() {
    return storedPayloadDigest;
  }

  /** Hex SHA-256 of the refused payload (canonical form). */
  public String requestedPayloadDigest() {
    return requestedPayloadDigest;
  }
}
