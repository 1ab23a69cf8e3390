package dev.relay.spring.autoconfigure;

import dev.relay.RelayConfig;
import dev.relay.RelayEventListener;
import dev.relay.micrometer.RelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * relay-micrometer's meters bound to the application's {@link MeterRegistry}: the gauges refresh on
 * {@code relay.metrics-refresh-interval}, the counters and timers come from the runtime's events.
 * Without a registry nothing is bound or refreshed.
 */
final class RelayMetricsBinding implements AutoCloseable {
  private final RelayMetrics metrics;
  private final boolean bound;

  RelayMetricsBinding(RelayMetrics metrics, MeterRegistry registry) {
    this.metrics = metrics;
    this.bound = registry != null;
    if (bound) {
      metrics.bindTo(registry);
      metrics.start();
    }
  }

  RelayEventListener listener() {
    return bound ? metrics.listener() : RelayEventListener.NONE;
  }

  /** Registers the runtime's (queue, kind) pairs' meters at zero, when a registry is bound. */
  void registerAtZero(RelayConfig runtime) {
    if (bound) {
      metrics.registerAtZero(runtime);
    }
  }

  /** Stops the refresh, waiting for one under way, before the pool it reads closes. */
  @Override
  public void close() {
    metrics.close();
  }
}
