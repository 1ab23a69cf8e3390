package dev.relay.docs.spring;

import java.math.BigDecimal;

/** The message of docs/spring.md's examples. */
public record OrderReceived(String orderId, String email, BigDecimal total) {}
