package dev.relay.examples.springshop;

/**
 * A purchase the shop cannot place as asked (no lines, an unknown SKU, a quantity out of range),
 * whatever the stock: answered 422 with the problem, before the key is recorded or anything is
 * stored.
 */
public final class InvalidPurchaseException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  InvalidPurchaseException(String problem) {
    super(problem);
  }
}
