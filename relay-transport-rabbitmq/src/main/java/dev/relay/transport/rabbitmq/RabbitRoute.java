package dev.relay.transport.rabbitmq;

import dev.relay.InvalidConfigurationException;

/**
 * Where one kind of work is published: an exchange and a routing key. Immutable; validated at
 * construction.
 *
 * <p>Every message is published {@code mandatory}: when the exchange routes it to no queue the
 * broker returns it, and the attempt ends "not delivered" (retried). Declare the exchange, the
 * queues and their bindings before starting the workers; the transport declares nothing.
 *
 * @param kind the kind of work this route publishes
 * @param exchange the exchange ({@code ""} is the default exchange, which routes by queue name)
 * @param routingKey the routing key
 */
public record RabbitRoute(String kind, String exchange, String routingKey) {

  /** Validates every setting; the messages name the setting. */
  public RabbitRoute {
    if (kind == null || kind.isBlank()) {
      throw new InvalidConfigurationException("kind", "is empty");
    }
    if (exchange == null || exchange.length() > 255) {
      throw new InvalidConfigurationException(
          "exchange", "of kind " + kind + " must be 0-255 characters, was " + exchange);
    }
    if (routingKey == null || routingKey.length() > 255) {
      throw new InvalidConfigurationException(
          "routingKey", "of kind " + kind + " must be 0-255 characters, was " + routingKey);
    }
  }

  /**
   * A route to a queue through the default exchange (routing key = queue name).
   *
   * @param kind the kind
   * @param queue the queue
   * @return the route
   */
  public static RabbitRoute toQueue(String kind, String queue) {
    return new RabbitRoute(kind, "", queue);
  }
}
