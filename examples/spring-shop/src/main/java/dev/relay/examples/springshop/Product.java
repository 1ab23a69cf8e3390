package dev.relay.examples.springshop;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import java.math.BigDecimal;

/** A product and its stock, for example P3, the blue mug at 20.00. */
@Entity
public class Product {
  @Id private String sku;

  @Column(nullable = false)
  private String name;

  @Column(nullable = false, precision = 10, scale = 2)
  private BigDecimal price;

  private int stock;

  protected Product() {}

  Product(String sku, String name, BigDecimal price, int stock) {
    this.sku = sku;
    this.name = name;
    this.price = price;
    this.stock = stock;
  }

  BigDecimal price() {
    return price;
  }

  int stock() {
    return stock;
  }

  /** Takes {@code quantity} from stock, or refuses when there is not enough. */
  void take(int quantity) {
    if (quantity > stock) {
      throw new SoldOutException(sku, quantity);
    }
    stock -= quantity;
  }
}
