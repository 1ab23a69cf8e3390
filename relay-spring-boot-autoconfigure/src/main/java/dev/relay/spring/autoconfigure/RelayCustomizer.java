package dev.relay.spring.autoconfigure;

import dev.relay.Relay;

/**
 * Changes the runtime's builder after the {@code relay.*} properties and the handlers were applied,
 * for what properties cannot say: an executor, a reconciling unknown-outcome policy, an event
 * listener. Declare it as a bean; customizers run in {@code @Order}.
 */
@FunctionalInterface
public interface RelayCustomizer {
  /**
   * Customizes the builder.
   *
   * @param builder the builder, with properties and handlers applied
   */
  void customize(Relay.Builder builder);
}
