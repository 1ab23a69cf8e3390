package dev.relay.examples.springshop;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.SequenceGenerator;
import java.math.BigDecimal;

/** An order; numbers start at 103, Mina's. Pending: the shop has no payment yet. */
@Entity
public class ShopOrder {
  @Id
  @GeneratedValue(strategy = GenerationType.SEQUENCE, generator = "order_numbers")
  @SequenceGenerator(
      name = "order_numbers",
      sequenceName = "order_numbers",
      initialValue = 103,
      allocationSize = 1)
  private Long id;

  @Column(nullable = false)
  private String customer;

  @Column(nullable = false, precision = 10, scale = 2)
  private BigDecimal total = BigDecimal.ZERO;

  @Column(nullable = false)
  private String status = "pending";

  protected ShopOrder() {}

  ShopOrder(String customer) {
    this.customer = customer;
  }

  Long id() {
    return id;
  }

  BigDecimal total() {
    return total;
  }

  void add(BigDecimal amount) {
    total = total.add(amount);
  }
}
