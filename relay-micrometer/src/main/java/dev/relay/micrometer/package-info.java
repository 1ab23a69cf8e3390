/**
 * Micrometer meters for Relay: see {@link dev.relay.micrometer.RelayMetrics}. An optional module;
 * the core does not depend on it.
 */
package dev.relay.micrometer;
