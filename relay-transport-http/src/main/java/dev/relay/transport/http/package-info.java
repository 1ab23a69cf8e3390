/**
 * HTTP delivery for Relay: {@link dev.relay.transport.http.HttpTransport} POSTs each attempt with
 * {@code Idempotency-Key} = work ID and a fencing token, and maps the reply to an outcome. The
 * receiver side is {@code dev.relay.receiver.http.HttpReceiver} in relay-core.
 */
package dev.relay.transport.http;
