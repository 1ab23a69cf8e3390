package dev.relay.transport.broker;

import dev.relay.receiver.InvalidReceiverInputException;

/**
 * One message as a Relay broker transport publishes it: the payload and the {@link BrokerHeaders},
 * read and checked.
 *
 * @param workId the work ID (the inbox's message ID)
 * @param kind the kind, or {@code null} when the sender did not say
 * @param generation the publishing attempt's claim generation, or {@code null}
 * @param fencingResource the resource of the fencing token, or {@code null}
 * @param fencingToken the fencing token, or {@code null}
 * @param orderingKey the ordering key, or {@code null}
 * @param sequence the sequence within the ordering key, or {@code null}
 * @param previousSequence the key's previous delivered sequence, or {@code null}
 * @param payload the payload (JSON text)
 */
public record BrokerDelivery(
    String workId,
    String kind,
    Long generation,
    String fencingResource,
    Long fencingToken,
    String orderingKey,
    Long sequence,
    Long previousSequence,
    String payload) {

  /** Whether the message carries a fencing token (and so its resource). */
  public boolean fenced() {
    return fencingToken != null;
  }

  /**
   * Reads and checks the headers of a received message.
   *
   * @param headers how to read the message's headers
   * @param payload the payload as text
   * @return the delivery
   * @throws InvalidReceiverInputException naming the header when the work ID is missing or blank, a
   *     number is not a decimal of zero or more, a fencing token and its resource do not come
   *     together, a sequence comes without its ordering key, or the payload is missing
   */
  public static BrokerDelivery read(BrokerHeaders.Lookup headers, String payload) {
    if (headers == null) {
      throw new InvalidReceiverInputException("headers", "lookup is null");
    }
    String workId = text(headers, BrokerHeaders.WORK_ID);
    if (workId == null) {
      throw new InvalidReceiverInputException(
          BrokerHeaders.WORK_ID, "header is missing: a Relay message needs its work ID");
    }
    String resource = text(headers, BrokerHeaders.FENCING_RESOURCE);
    Long token = number(headers, BrokerHeaders.FENCING_TOKEN);
    if ((resource == null) != (token == null)) {
      throw new InvalidReceiverInputException(
          resource == null ? BrokerHeaders.FENCING_RESOURCE : BrokerHeaders.FENCING_TOKEN,
          "header is missing: a fencing token and its resource come together");
    }
    String orderingKey = text(headers, BrokerHeaders.ORDERING_KEY);
    Long sequence = number(headers, BrokerHeaders.SEQUENCE);
    Long previous = number(headers, BrokerHeaders.PREVIOUS_SEQUENCE);
    if (orderingKey == null && (sequence != null || previous != null)) {
      throw new InvalidReceiverInputException(
          BrokerHeaders.ORDERING_KEY, "header is missing: a sequence belongs to an ordering key");
    }
    if (payload == null) {
      throw new InvalidReceiverInputException("payload", "is missing");
    }
    return new BrokerDelivery(
        workId,
        text(headers, BrokerHeaders.KIND),
        number(headers, BrokerHeaders.GENERATION),
        resource,
        token,
        orderingKey,
        sequence,
        previous,
        payload);
  }

  private static String text(BrokerHeaders.Lookup headers, String name) {
    String v = headers.value(name);
    if (v == null) {
      return null;
    }
    if (v.isBlank()) {
      throw new InvalidReceiverInputException(name, "header is blank");
    }
    return v.strip();
  }

  private static Long number(BrokerHeaders.Lookup headers, String name) {
    String v = headers.value(name);
    if (v == null) {
      return null;
    }
    String t = v.strip();
    if (t.isEmpty() || t.length() > 19 || !t.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
      throw new InvalidReceiverInputException(
          name, "header '" + v + "' is not a decimal number of zero or more");
    }
    try {
      return Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new InvalidReceiverInputException(name, "header '" + v + "' is too large");
    }
  }
}
