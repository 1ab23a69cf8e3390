package dev.relay.examples.springshop;

/** Not enough stock: the purchase rolls back, with its order and its work. */
public final class SoldOutException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  SoldOutException(String sku, int quantity) {
    super("not enough stock of " + sku + " for " + quantity);
  }
}
