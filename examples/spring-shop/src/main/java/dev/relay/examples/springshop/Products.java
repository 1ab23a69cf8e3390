package dev.relay.examples.springshop;

import org.springframework.data.jpa.repository.JpaRepository;

/** Products by SKU. */
public interface Products extends JpaRepository<Product, String> {}
