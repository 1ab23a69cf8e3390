/**
 * NATS JetStream delivery for Relay: {@link dev.relay.transport.nats.NatsTransport} publishes each
 * attempt with {@code Nats-Msg-Id} = work ID, so the stream drops a repeat inside its duplicate
 * window, and refuses to start when a kind's deduplication horizon exceeds that window.
 */
package dev.relay.transport.nats;
