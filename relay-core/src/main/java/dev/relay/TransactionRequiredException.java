package dev.relay;

/**
 * The connection cannot carry a business transaction: it is closed, or in auto-commit mode (an
 * enqueue there would commit on its own, apart from the business change it belongs to). Nothing was
 * sent.
 */
public final class TransactionRequiredException extends RelayException {
  private static final long serialVersionUID = 1L;

  /**
   * @param problem what is wrong with the connection
   */
  public TransactionRequiredException(String problem) {
    super(problem);
  }
}
