package dev.relay;

/**
 * The connection was lost while a COMMIT was in flight: the transaction may or may not have
 * committed. Never guess; re-read the stored rows (Relay's workers recover their claims this way
 * before running anything).
 */
public class CommitOutcomeUnknownException extends RetryableException {
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
