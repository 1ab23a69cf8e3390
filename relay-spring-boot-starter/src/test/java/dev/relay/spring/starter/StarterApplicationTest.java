package dev.relay.spring.starter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.spring.RelayHandler;
import dev.relay.spring.RelayOutbox;
import dev.relay.spring.autoconfigure.RelayConnections;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * A whole Spring Boot application with the starter: Boot's DataSource, Jackson 3
 * and @Transactional.
 */
@RelayDatabaseTest
class StarterApplicationTest {
  record OrderReceived(String orderId, String item) {}

  @Service
  static class Shop {
    private final JdbcTemplate jdbc;
    private final RelayOutbox outbox;
    private final String schema;

    Shop(JdbcTemplate jdbc, RelayOutbox outbox, Environment env) {
      this.jdbc = jdbc;
      this.outbox = outbox;
      this.schema = env.getProperty("relay.schema");
    }

    @Transactional
    public void purchase(String orderId, String item, boolean fail) {
      jdbc.update("INSERT INTO " + schema + ".purchase VALUES (?, ?)", orderId, item);
      outbox.enqueue(
          "order-" + orderId + "-ack", "order_received", new OrderReceived(orderId, item));
      if (fail) {
        throw new IllegalStateException("payment declined");
      }
    }
  }

  static class Mailer {
    final List<OrderReceived> sent = new CopyOnWriteArrayList<>();

    @RelayHandler(kind = "order_received")
    Outcome on(OrderReceived order, Claim claim) {
      sent.add(order);
      return Outcome.done();
    }
  }

  @SpringBootApplication
  static class App {
    @Bean
    Mailer mailer() {
      return new Mailer();
    }
  }

  @Test
  void transactionalPurchaseEnqueuesWithTheOrderAndTheHandlerGetsTheRecord(TestDatabase db)
      throws Exception {
    db.execute("CREATE TABLE {schema}.purchase (id text PRIMARY KEY, item text NOT NULL)");
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(App.class)
            .web(WebApplicationType.NONE)
            .properties(
                "spring.datasource.url=" + db.jdbcUrl(),
                "relay.schema=" + db.schema(),
                "relay.poll-interval=200ms")
            .run()) {
      Shop shop = app.getBean(Shop.class);
      assertThat(app.getBean(RelayConnections.class).shared())
          .as("a pool of Relay's own beside Boot's HikariDataSource")
          .isFalse();

      assertThatThrownBy(() -> shop.purchase("103", "mug", true))
          .hasMessageContaining("payment declined");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.purchase")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();

      shop.purchase("103", "mug", false);
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(app.getBean(Mailer.class).sent)
                      .containsExactly(new OrderReceived("103", "mug")));
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.purchase")).isEqualTo(1);
    }
  }
}
