/**
 * OpenTelemetry tracing for Relay: see {@link dev.relay.opentelemetry.RelayOpenTelemetry}. An
 * optional module on the OpenTelemetry API; the core does not depend on it.
 */
package dev.relay.opentelemetry;
