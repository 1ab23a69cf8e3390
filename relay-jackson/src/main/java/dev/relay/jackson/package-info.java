/**
 * Typed payloads for Relay with Jackson 3: see {@link dev.relay.jackson.JsonCodec}. An optional
 * module; the core does not depend on it.
 */
package dev.relay.jackson;
