package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code relay serve} as a process: health, metrics, work done, and a clean stop on SIGTERM. */
@RelayDatabaseTest
class ServeTest {
  private static final Pattern URL = Pattern.compile("http://127\\.0\\.0\\.1:(\\d+)/health");
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void servesHealthAndMetricsRunsWorkAndStopsOnSigterm(TestDatabase db, @TempDir Path dir)
      throws Exception {
    // A receiver for the kind delivered over HTTP: records the idempotency key, answers an id.
    Map<String, String> received = new java.util.concurrent.ConcurrentHashMap<>();
    HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    receiver.createContext(
        "/mail",
        exchange -> {
          received.put(
              exchange.getRequestHeaders().getFirst("Idempotency-Key"),
              new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
          byte[] body = "{\"email_id\": \"mail-7\"}".getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    receiver.start();
    Path config = dir.resolve("relay.json");
    Files.writeString(
        config,
        "{\"queues\": [\"default\", \"mail\"], \"concurrency\": 2, \"poll_interval\": \"200ms\","
            + " \"shutdown_grace\": \"5s\", \"maintenance_interval\": \"2s\","
            + " \"metrics_refresh_interval\": \"1s\","
            + " \"kinds\": {\"order_received\": {\"handler\": \"log\", \"max_attempts\": 5,"
            + " \"dedup_horizon\": \"48h\"},"
            + " \"mail\": {\"handler\": \"http\", \"url\": \"http://127.0.0.1:"
            + receiver.getAddress().getPort()
            + "/mail\", \"receiver_ref_field\": \"email_id\", \"milestone\": \"queued\"}}}");
    Path out = dir.resolve("serve.out");
    Path err = dir.resolve("serve.err");
    Process serve =
        Cli.builder(
                Map.of(),
                CommandLineTest.on(
                    db,
                    "serve",
                    "--config",
                    config.toString(),
                    "--http-port",
                    "0",
                    "--worker-id",
                    "serve-test"))
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    try {
      AtomicInteger port = new AtomicInteger();
      await()
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(100))
          .untilAsserted(
              () -> {
                if (!serve.isAlive()) {
                  throw new IllegalStateException("relay serve exited: " + read(err));
                }
                Matcher m = URL.matcher(read(out));
                assertThat(m.find()).isTrue();
                port.set(Integer.parseInt(m.group(1)));
              });
      String base = "http://127.0.0.1:" + port.get();
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                HttpResponse<String> health = get(base + "/health");
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(health.body())
                    .contains("\"status\":\"up\"")
                    .contains("\"reachable\":true")
                    .contains("\"current\":true");
              });

      Cli.Result enqueued =
          Cli.run(
              CommandLineTest.on(
                  db,
                  "enqueue",
                  "--id",
                  "order-103-ack",
                  "--kind",
                  "order_received",
                  "--payload",
                  "{\"order_id\": 103}"));
      assertThat(enqueued.exitCode()).as(enqueued.toString()).isZero();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  "done"
                      .equals(
                          db.queryString(
                              "SELECT state FROM {schema}.outbox"
                                  + " WHERE work_id = 'order-103-ack'")));
      assertThat(
              db.queryString(
                  "SELECT registered_by FROM {schema}.kind WHERE kind = 'order_received'"))
          .isEqualTo("serve-test");
      assertThat(
              db.queryString(
                  "SELECT dedup_horizon::text FROM {schema}.kind WHERE kind = 'order_received'"))
          .isEqualTo("48:00:00");

      // The http kind goes through the HTTP transport named in the config file.
      Cli.Result mail =
          Cli.run(
              CommandLineTest.on(
                  db, "enqueue", "--id", "mail-1", "--kind", "mail", "--payload", "{\"to\": 1}"));
      assertThat(mail.exitCode()).as(mail.toString()).isZero();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  "done mail-7 queued"
                      .equals(
                          db.queryString(
                              "SELECT state || ' ' || receiver_ref || ' ' || milestone"
                                  + " FROM {schema}.outbox WHERE work_id = 'mail-1'")));
      assertThat(received).containsOnlyKeys("mail-1");

      HttpResponse<String> metrics = get(base + "/metrics");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.headers().firstValue("Content-Type"))
          .hasValueSatisfying(t -> assertThat(t).startsWith("text/plain"));
      assertThat(metrics.body()).contains("jvm_memory_used_bytes");
      assertThat(read(err)).contains("order-103-ack");
    } finally {
      receiver.stop(0);
      serve.destroy(); // SIGTERM: stop claiming, finish, close
      assertThat(serve.waitFor(60, TimeUnit.SECONDS)).as("serve stops on SIGTERM").isTrue();
    }
    assertThat(read(err)).contains("stopping").doesNotContain("Exception");
  }

  @Test
  void aBadConfigIsAUsageError(TestDatabase db, @TempDir Path dir) throws Exception {
    Path config = dir.resolve("relay.json");
    Files.writeString(config, "{\"kinds\": {\"k\": {\"handler\": \"smtp\"}}}");
    Cli.Result r = Cli.run(CommandLineTest.on(db, "serve", "--config", config.toString()));
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).contains("handler 'smtp' is not one of [log, http]");
    Cli.Result missing = Cli.run(CommandLineTest.on(db, "serve"));
    assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(2);
  }

  private HttpResponse<String> get(String url) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String read(Path p) {
    try {
      return Files.readString(p, StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      return "";
    }
  }
}
