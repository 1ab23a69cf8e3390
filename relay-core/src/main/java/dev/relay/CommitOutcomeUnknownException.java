package dev.relay;

/**
 * The connection was lost while a COMMIT was in flight: the transaction may or may not have
 * committed. Never guess; re-read the stored rows (Relay's workers recover their claims this way
 * before running anything).
 *
 * <p>Not a {@link RetryableException}, and {@link #isRetryable()} is false: a loop that repeats the
 * business transaction on a retryable error would apply the business change twice when the first
 * commit did land. Find out first (the rows this transaction wrote are there or not), then repeat
 * only what is missing. Relay's own part is safe to repeat: an equal enqueue of a stored ID answers
 * {@link EnqueueResult.Status#ALREADY_ENQUEUED}.
 */
public class CommitOutcomeUnknownException extends RelayException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what was being committed
   * @param sqlState the SQLState reported by the driver
   * @param cause the driver error
   */
  public CommitOutcomeUnknownException(String message, String sqlState, Throwable cause) {
    super(message, sqlState, cause);
  }
}
