/**
 * What every Relay broker transport shares: the message headers ({@link
 * dev.relay.transport.broker.BrokerHeaders}), the {@code broker_accepted} milestone ({@link
 * dev.relay.transport.broker.BrokerAccepted}), and the consuming side's inbox helper ({@link
 * dev.relay.transport.broker.BrokerInbox}) that applies a received message once, in the consumer's
 * own database transaction, before the consumer acknowledges it to its broker.
 */
package dev.relay.transport.broker;
