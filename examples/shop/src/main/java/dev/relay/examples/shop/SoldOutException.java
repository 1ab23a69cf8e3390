package dev.relay.examples.shop;

/** A purchase asked for more of an item than is in stock; the purchase wrote nothing. */
public final class SoldOutException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String sku;

  /**
   * @param sku the item
   * @param wanted how many were asked for
   */
  public SoldOutException(String sku, int wanted) {
    super("not enough stock of " + sku + " for " + wanted + "; nothing was written");
    this.sku = sku;
  }

  /** The item that was short. */
  public String sku() {
    return sku;
  }
}
