package dev.relay;

/**
 * A failure that a new attempt of the whole transaction may not meet: a serialization failure
 * ({@code 40001}, for example a concurrent enqueue of the same ID under REPEATABLE READ), a
 * deadlock ({@code 40P01}), a lock timeout ({@code 55P03}) or a connection lost before the COMMIT
 * (class {@code 08}). Roll back, then repeat the business transaction from its start. A connection
 * lost during the COMMIT is a {@link CommitOutcomeUnknownException} instead, which is not one of
 * these: the transaction may have committed, so find out before repeating anything.
 */
public class RetryableException extends RelayException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed
   * @param sqlState the SQLState reported by the driver
   * @param cause the driver error
   */
  public RetryableException(String message, String sqlState, Throwable cause) {
    super(message, sqlState, cause);
  }

  @Override
  public boolean isRetryable() {
    return true;
  }
}
