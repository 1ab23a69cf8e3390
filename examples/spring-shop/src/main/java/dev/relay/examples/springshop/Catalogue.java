package dev.relay.examples.springshop;

import java.math.BigDecimal;
import java.util.List;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/** The story's stock on an empty shop: P3 blue mug 11, P7 sold out, P9 green tea 6. */
@Component
class Catalogue implements ApplicationRunner {
  private final Products products;

  Catalogue(Products products) {
    this.products = products;
  }

  @Override
  @Transactional
  public void run(ApplicationArguments args) {
    if (products.count() == 0) {
      products.saveAll(
          List.of(
              new Product("P3", "blue mug", new BigDecimal("20.00"), 11),
              new Product("P7", "sold-out teapot", new BigDecimal("35.00"), 0),
              new Product("P9", "green tea", new BigDecimal("4.50"), 6)));
    }
  }
}
