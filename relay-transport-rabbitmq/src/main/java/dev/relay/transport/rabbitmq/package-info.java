/**
 * RabbitMQ delivery for Relay: {@link dev.relay.transport.rabbitmq.RabbitTransport} publishes each
 * attempt with publisher confirms (persistent, {@code mandatory}, message-id = work ID) and maps
 * the broker's answer to an outcome; {@link dev.relay.transport.rabbitmq.RabbitInbox} is the
 * consuming side: Relay's inbox applied in the consumer's transaction, acknowledged after commit.
 */
package dev.relay.transport.rabbitmq;
