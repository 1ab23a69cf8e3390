/**
 * Kafka for Relay: {@link dev.relay.transport.kafka.KafkaTransport} publishes each attempt with an
 * idempotent producer ({@code acks=all}) and records {@code broker_accepted} on the broker's ack;
 * {@link dev.relay.transport.kafka.KafkaInboxConsumer} applies Relay's inbox per record and commits
 * offsets only after the database transaction committed. The header contract is {@code
 * dev.relay.transport.broker.BrokerHeaders}; see docs/transports.md.
 */
package dev.relay.transport.kafka;
