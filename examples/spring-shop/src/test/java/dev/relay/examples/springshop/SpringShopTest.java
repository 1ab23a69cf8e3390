package dev.relay.examples.springshop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The whole story on a running shop (Tomcat on 127.0.0.1, embedded PostgreSQL): Mina's purchase,
 * its acknowledgement delivered over HTTP to the mailer and applied once, a retried purchase, and
 * the P7 rollback.
 */
@RelayDatabaseTest
class SpringShopTest {
  private static final String MINA =
      "{\"customer\":\"mina@example.com\",\"lines\":"
          + "[{\"sku\":\"P3\",\"quantity\":1},{\"sku\":\"P9\",\"quantity\":2}]}";
  private static final String P7 =
      "{\"customer\":\"mina@example.com\",\"lines\":[{\"sku\":\"P7\",\"quantity\":1}]}";

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> post(int port, String path, String key, String body)
      throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String stock(TestDatabase db) throws Exception {
    return db.queryString(
        "SELECT string_agg(sku || '=' || stock, ' ' ORDER BY sku) FROM {schema}.product");
  }

  @Test
  void purchaseAckToTheMailerOnceRetrySameAnswerAndP7RollsBack(TestDatabase db) throws Exception {
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(SpringShopApplication.class)
            .properties(
                // The shop's tables in the test's schema, beside Relay's.
                "spring.datasource.url=" + db.jdbcUrl() + "&currentSchema=" + db.schema(),
                "relay.schema=" + db.schema(),
                "relay.poll-interval=200ms",
                "server.port=0")
            .run()) {
      int port = Integer.parseInt(app.getEnvironment().getRequiredProperty("local.server.port"));

      HttpResponse<String> first = post(port, "/purchases", "purchase-103", MINA);
      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(first.body())
          .isEqualTo("{\"order\":103,\"total\":\"29.00\",\"work\":\"order-103-ack\"}");

      // Relay delivers order-103-ack over HTTP to the mailer, which queues one mail.
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'order-103-ack'"),
              "done"::equals);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.sent_mail")).isEqualTo(1);
      assertThat(
              db.queryString(
                  "SELECT body::jsonb->>'message' FROM {schema}.sent_mail"
                      + " WHERE message_id = 'order-103-ack'"))
          .isEqualTo("Order received; payment still pending");

      // A repeated delivery (a lost reply, a redrive) gets the stored answer; no second mail.
      String payload =
          db.queryString("SELECT payload::text FROM {schema}.work WHERE work_id = 'order-103-ack'");
      HttpResponse<String> repeat = post(port, "/mailer/acks", "order-103-ack", payload);
      assertThat(repeat.statusCode()).isEqualTo(200);
      assertThat(repeat.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.sent_mail")).isEqualTo(1);

      // Mina's client retries the purchase with the same key: the same answer, nothing new.
      HttpResponse<String> retry = post(port, "/purchases", "purchase-103", MINA);
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.body()).isEqualTo(first.body());
      assertThat(post(port, "/purchases", "purchase-103", P7).statusCode())
          .as("the same key for another purchase")
          .isEqualTo(422);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.shop_order")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
      assertThat(stock(db)).isEqualTo("P3=10 P7=0 P9=4");

      // P7 is sold out: the purchase fails after its enqueue and leaves no order, work or key.
      HttpResponse<String> soldOut = post(port, "/purchases", "purchase-p7", P7);
      assertThat(soldOut.statusCode()).isEqualTo(409);
      assertThat(soldOut.body()).contains("not enough stock of P7");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.shop_order")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
      assertThat(
              db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE message_id = 'purchase-p7'"))
          .isZero();
      assertThat(stock(db)).isEqualTo("P3=10 P7=0 P9=4");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.sent_mail")).isEqualTo(1);
    }
  }
}
