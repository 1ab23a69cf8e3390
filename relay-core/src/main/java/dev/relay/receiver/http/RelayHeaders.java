package dev.relay.receiver.http;

/**
 * The HTTP headers Relay's HTTP transport sends with each delivery, and that {@link Delivery#read}
 * reads. Any sender may set them; only {@link #IDEMPOTENCY_KEY} is required.
 */
public final class RelayHeaders {
  private RelayHeaders() {}

  /** The work ID: the same on every attempt and redrive of one intention. Required. */
  public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  /** The protected resource a fencing token belongs to. Required with {@link #FENCING_TOKEN}. */
  public static final String FENCING_RESOURCE = "Relay-Fencing-Resource";

  /** A fencing token from the resource's own counter (a decimal, zero or more). */
  public static final String FENCING_TOKEN = "Relay-Fencing-Token";

  /** The work's ordering key, when it has one. */
  public static final String ORDERING_KEY = "Relay-Ordering-Key";

  /** The work's sequence within its ordering key. Sent with {@link #ORDERING_KEY}. */
  public static final String SEQUENCE = "Relay-Sequence";

  /**
   * The sequence of the key's previous delivered item (absent for the first), so a receiver that
   * needs every item can tell a cancelled gap from a missing message.
   */
  public static final String PREVIOUS_SEQUENCE = "Relay-Previous-Sequence";

  /** The response header set on a replayed (stored) response: {@code true}. */
  public static final String REPLAYED = "Idempotent-Replayed";

  /** The response header telling a sender when to retry, in seconds. */
  public static final String RETRY_AFTER = "Retry-After";
}
