package dev.relay.receiver.http;

import dev.relay.internal.receiver.ReceiverInput;
import dev.relay.receiver.InvalidReceiverInputException;

/**
 * One incoming delivery as Relay's HTTP transport sends it: the body and the headers of {@link
 * RelayHeaders}, validated.
 *
 * @param messageId the {@code Idempotency-Key} (the work ID)
 * @param fencingResource the resource of the fencing token, or {@code null}
 * @param fencingToken the fencing token, or {@code null}
 * @param orderingKey the ordering key, or {@code null}
 * @param sequence the sequence within the ordering key, or {@code null}
 * @param previousSequence the previous delivered sequence of the key, or {@code null}
 * @param body the request body (JSON text)
 */
public record Delivery(
    String messageId,
    String fencingResource,
    Long fencingToken,
    String orderingKey,
    Long sequence,
    Long previousSequence,
    String body) {

  /**
   * Reads and validates the headers of a delivery.
   *
   * @param headers the request's header lookup
   * @param body the request body
   * @return the delivery
   * @throws InvalidReceiverInputException when the key is missing or invalid, a number header is
   *     not a decimal of zero or more, or a token comes without its resource (answer 400)
   */
  public static Delivery read(HeaderLookup headers, String body) {
    if (headers == null) {
      throw new InvalidReceiverInputException("headers", "lookup is null");
    }
    String key = headers.first(RelayHeaders.IDEMPOTENCY_KEY);
    if (key == null) {
      throw new InvalidReceiverInputException(
          RelayHeaders.IDEMPOTENCY_KEY, "header is missing: a delivery needs its stable ID");
    }
    ReceiverInput.id(RelayHeaders.IDEMPOTENCY_KEY, key.strip());
    String resource = headers.first(RelayHeaders.FENCING_RESOURCE);
    Long token = number(headers, RelayHeaders.FENCING_TOKEN);
    if (token != null && resource == null) {
      throw new InvalidReceiverInputException(
          RelayHeaders.FENCING_RESOURCE,
          "header is missing: a fencing token means nothing without its resource");
    }
    if (resource != null) {
      ReceiverInput.id(RelayHeaders.FENCING_RESOURCE, resource.strip());
      if (token == null) {
        throw new InvalidReceiverInputException(
            RelayHeaders.FENCING_TOKEN, "header is missing while a fencing resource is named");
      }
    }
    String orderingKey = headers.first(RelayHeaders.ORDERING_KEY);
    if (orderingKey != null) {
      ReceiverInput.id(RelayHeaders.ORDERING_KEY, orderingKey.strip());
    }
    return new Delivery(
        key.strip(),
        resource == null ? null : resource.strip(),
        token,
        orderingKey == null ? null : orderingKey.strip(),
        number(headers, RelayHeaders.SEQUENCE),
        number(headers, RelayHeaders.PREVIOUS_SEQUENCE),
        body);
  }

  private static Long number(HeaderLookup headers, String name) {
    String text = headers.first(name);
    if (text == null) {
      return null;
    }
    String t = text.strip();
    if (t.isEmpty() || t.length() > 19 || !t.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
      throw new InvalidReceiverInputException(
          name, "header '" + text + "' is not a decimal number of zero or more");
    }
    try {
      return Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new InvalidReceiverInputException(name, "header '" + text + "' is too large");
    }
  }
}
