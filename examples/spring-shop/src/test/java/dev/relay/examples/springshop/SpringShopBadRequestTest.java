package dev.relay.examples.springshop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Bad purchases on a running shop (Tomcat on 127.0.0.1, embedded PostgreSQL), as a new user's curl
 * sends them: each is answered 400 or 422 with {@code {"error": ...}} naming the problem (not the
 * 401 the shop's security made of Spring's error dispatch), and leaves no order, no work, no key
 * and the stock as it was; the key of a refused request still places the purchase afterwards.
 */
@RelayDatabaseTest
class SpringShopBadRequestTest {
  private static final String MINA =
      "{\"customer\":\"mina@example.com\",\"lines\":"
          + "[{\"sku\":\"P3\",\"quantity\":1},{\"sku\":\"P9\",\"quantity\":2}]}";

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A POST to /purchases with JSON's content type, and the key unless it is null. */
  private HttpRequest.Builder purchase(int port, String key, String body) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/purchases"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    return key == null ? b : b.header("Idempotency-Key", key);
  }

  private HttpResponse<String> purchase(int port, String body) throws Exception {
    return send(purchase(port, "purchase-bad", body));
  }

  private static String line(String sku, String quantity) {
    return "{\"customer\":\"mina@example.com\",\"lines\":[{\"sku\":\""
        + sku
        + "\",\"quantity\":"
        + quantity
        + "}]}";
  }

  private static void assertProblem(HttpResponse<String> r, int status, String... problem) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(r.body()).startsWith("{\"error\":\"").contains(problem);
  }

  @Test
  void badPurchasesAre400Or422NamingTheProblemAndLeaveNothing(TestDatabase db) throws Exception {
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(SpringShopApplication.class)
            .properties(
                "spring.datasource.url=" + db.jdbcUrl() + "&currentSchema=" + db.schema(),
                "relay.schema=" + db.schema(),
                "server.port=0")
            .run()) {
      int port = Integer.parseInt(app.getEnvironment().getRequiredProperty("local.server.port"));

      // Not a purchase at all: 400.
      assertProblem(send(purchase(port, null, MINA)), 400, "the Idempotency-Key header is missing");
      assertProblem(purchase(port, "garbage"), 400, "the body is not a purchase", "garbage");
      assertProblem(purchase(port, ""), 400, "the body is not a purchase");
      assertProblem(
          purchase(port, line("P3", "\"one\"")),
          400,
          "the body is not a purchase: lines[0].quantity: ",
          "\\\"one\\\"");
      assertProblem(
          purchase(port, line("P3", "99999999999")),
          400,
          "the body is not a purchase: lines[0].quantity: ",
          "99999999999");

      // A purchase the shop cannot place as asked: 422, whatever the stock.
      assertProblem(purchase(port, line("NOPE", "1")), 422, "lines[0].sku: no product NOPE");
      assertProblem(
          purchase(port, line("P3", "-1")), 422, "lines[0].quantity must be 1-100, was -1");
      assertProblem(purchase(port, line("P3", "0")), 422, "lines[0].quantity must be 1-100, was 0");
      assertProblem(
          purchase(port, line("P3", "2147483647")),
          422,
          "lines[0].quantity must be 1-100, was 2147483647");
      assertProblem(
          purchase(port, "{\"customer\":\"mina@example.com\",\"lines\":[{\"sku\":\"P3\"}]}"),
          422,
          "lines[0].quantity is missing");
      assertProblem(
          purchase(port, "{\"customer\":\"mina@example.com\",\"lines\":[{\"quantity\":1}]}"),
          422,
          "lines[0].sku is missing");
      assertProblem(
          purchase(port, "{\"customer\":\"mina@example.com\",\"lines\":[]}"),
          422,
          "lines is empty");
      assertProblem(
          purchase(port, "{\"lines\":[{\"sku\":\"P3\",\"quantity\":1}]}"),
          422,
          "customer is missing");

      // An error Spring answers itself reaches the client as itself, not as the security's 401.
      HttpResponse<String> text =
          send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/purchases"))
                  .header("Content-Type", "text/plain")
                  .header("Idempotency-Key", "purchase-text")
                  .POST(HttpRequest.BodyPublishers.ofString(MINA)));
      assertThat(text.statusCode()).as(text.body()).isEqualTo(415);

      assertThat(db.queryLong("SELECT count(*) FROM {schema}.shop_order")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isZero();
      assertThat(
              db.queryString(
                  "SELECT string_agg(sku || '=' || stock, ' ' ORDER BY sku) FROM {schema}.product"))
          .isEqualTo("P3=11 P7=0 P9=6");

      // The refused requests recorded no key: the same key now places Mina's purchase.
      HttpResponse<String> placed = purchase(port, MINA);
      assertThat(placed.statusCode()).as(placed.body()).isEqualTo(201);
      assertThat(placed.body())
          .isEqualTo("{\"order\":103,\"total\":\"29.00\",\"work\":\"order-103-ack\"}");
    }
  }
}
