package dev.relay.receiver;

/**
 * What a fence said to one token.
 *
 * @param resource the protected resource
 * @param token the token offered
 * @param accepted true when the token was equal to or higher than every token seen before (it is
 *     now the highest); false when a higher one was already accepted: the protected write must not
 *     happen
 * @param highestToken the highest token the fence holds after this call
 */
public record FenceResult(String resource, long token, boolean accepted, long highestToken) {
  /** Whether the token was refused as stale. */
  public boolean refused() {
    return !accepted;
  }
}
