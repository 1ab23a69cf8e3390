package dev.relay.examples.shop;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A purchase request: a customer and the lines to buy. Its JSON form is the request body that the
 * request token is bound to (a retry must send an equal body).
 *
 * @param customerId the buyer
 * @param lines items and quantities, in order
 */
public record Purchase(long customerId, List<Line> lines) {
  /**
   * One line.
   *
   * @param sku the product
   * @param quantity how many, at least one
   */
  public record Line(String sku, int quantity) {
    /** Requires a product and a positive quantity. */
    public Line {
      if (sku == null || sku.isEmpty() || quantity < 1) {
        throw new IllegalArgumentException("a line needs a sku and a quantity of 1 or more");
      }
    }
  }

  /** Copies the lines; requires at least one. */
  public Purchase {
    lines = List.copyOf(lines);
    if (lines.isEmpty()) {
      throw new IllegalArgumentException("a purchase needs at least one line");
    }
  }

  /**
   * A purchase from pairs of sku and quantity, e.g. {@code of(1, "P3", 1, "P9", 2)}.
   *
   * @param customerId the buyer
   * @param skuAndQuantity alternating sku (String) and quantity (Integer)
   * @return the purchase
   */
  public static Purchase of(long customerId, Object... skuAndQuantity) {
    List<Line> lines = new ArrayList<>();
    for (int i = 0; i + 1 < skuAndQuantity.length; i += 2) {
      lines.add(new Line((String) skuAndQuantity[i], (Integer) skuAndQuantity[i + 1]));
    }
    return new Purchase(customerId, lines);
  }

  /** The request body as JSON text. */
  public String toJson() {
    StringBuilder b = new StringBuilder();
    b.append("{\"customer_id\":").append(customerId).append(",\"lines\":[");
    for (int i = 0; i < lines.size(); i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(
          String.format(
              Locale.ROOT,
              "{\"sku\":\"%s\",\"quantity\":%d}",
              lines.get(i).sku().replace("\"", ""),
              lines.get(i).quantity()));
    }
    return b.append("]}").toString();
  }
}
