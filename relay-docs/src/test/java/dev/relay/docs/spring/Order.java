package dev.relay.docs.spring;

import java.math.BigDecimal;

/** The order, as the application of docs/spring.md stores it. */
public record Order(String id, String email, BigDecimal total) {}
