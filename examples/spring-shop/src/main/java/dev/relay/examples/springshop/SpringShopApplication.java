package dev.relay.examples.springshop;

import dev.relay.Handler;
import dev.relay.spring.RelayHandler;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Mina's order 103 as a Spring Boot application: {@code POST /purchases} stores the order and
 * enqueues {@code order-103-ack} in one transaction ({@link Purchases}); Relay delivers the
 * acknowledgement over HTTP to the mailer ({@link MailerController}), which applies it once.
 */
@SpringBootApplication
public class SpringShopApplication {
  /** Starts the shop; {@code spring.datasource.*} names the PostgreSQL database. */
  public static void main(String[] args) {
    SpringApplication.run(SpringShopApplication.class, args);
  }

  /** Delivers {@code order_received} work to the mailer over HTTP. */
  @Bean
  @RelayHandler(kind = "order_received")
  Handler orderReceivedDelivery(Environment env) {
    return new MailerDelivery(env);
  }
}
