package dev.relay.spring.autoconfigure;

import dev.relay.Handler;
import java.util.Map;

/**
 * Handlers for kinds that are known only at run time, from configuration rather than code: each
 * bean of this type adds its kinds to the runtime next to the {@code @RelayHandler} methods and
 * {@link Handler} beans, with the policy of {@code relay.kinds.<kind>.*}. A kind may have one
 * handler in the whole context. {@code relay serve} uses it for the kinds its configuration names
 * ({@code relay.kinds.<kind>.handler}); an application with its handlers in code does not need it.
 */
@FunctionalInterface
public interface RelayKindHandlers {
  /** The handlers by kind, in the order they are registered. */
  Map<String, Handler> handlers();
}
