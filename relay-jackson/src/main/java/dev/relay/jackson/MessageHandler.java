package dev.relay.jackson;

import dev.relay.Claim;
import dev.relay.Outcome;

/**
 * A handler that receives its payload as an object: {@code (message, claim) -> outcome}. Adapt it
 * to a {@link dev.relay.Handler} with {@link JsonCodec#handler(Class, MessageHandler)}.
 *
 * <p>The contract is {@link dev.relay.Handler}'s: return an {@link Outcome}; a thrown exception is
 * an attempt whose effect is unknown, handled by the kind's policy.
 *
 * @param <T> the message type
 */
@FunctionalInterface
public interface MessageHandler<T> {
  /**
   * Handles one attempt.
   *
   * @param message the payload, read as {@code T} (never null)
   * @param claim the claim, for the work ID, attempt number, deadline and stop signals
   * @return what happened
   * @throws Exception when the effect is unknown
   */
  Outcome handle(T message, Claim claim) throws Exception;
}
