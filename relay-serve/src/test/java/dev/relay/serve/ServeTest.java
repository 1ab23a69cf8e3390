package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.spring.autoconfigure.RelayProperties;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.CookieManager;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * {@code relay serve} in this JVM from a config file (an application.yml; the JSON file of earlier
 * releases in {@link #aJsonConfigOfEarlierReleasesStillServesAndTurnsTheConsoleOff}): its kinds'
 * work delivered (one over HTTP to a receiver in the test), the console behind form login, health
 * and Prometheus, on 127.0.0.1.
 */
@RelayDatabaseTest
class ServeTest {
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

  @Test
  void servesWorkConsoleHealthAndPrometheusOnLoopback(TestDatabase db, @TempDir Path dir)
      throws Exception {
    Map<String, String> received = new ConcurrentHashMap<>();
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
    String hash = BCrypt.hashpw("s3cret-op", BCrypt.gensalt(4));
    Path config = dir.resolve("application.yml");
    Files.writeString(
        config,
        """
        server:
          port: 0
        relay:
          queues: [default, mail]
          concurrency: 2
          poll-interval: 200ms
          shutdown-grace: 5s
          kinds:
            order_received:
              handler: log
              dedup-horizon: 48h
            mail:
              handler: http
              url: http://127.0.0.1:%d/mail
              receiver-ref-field: email_id
              milestone: queued
          schedules:
            pulse: {kind: order_received, every: 1s}
          console:
            users:
              - {name: olga, hash: '%s', role: operator}
              - {name: vera, hash: '%s', role: viewer}
        """
            .formatted(receiver.getAddress().getPort(), hash, hash));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (Serving serving = serve(db, config, out, "--worker-id", "serve-test")) {
      var web = ((WebServerApplicationContext) serving.context()).getWebServer();
      assertThat(out.toString()).contains("http://127.0.0.1:" + serving.port() + "/relay");
      assertThat(serving.context().getEnvironment().getProperty("server.address"))
          .isEqualTo("127.0.0.1");
      assertThat(web.getPort()).isEqualTo(serving.port());
      String base = "http://127.0.0.1:" + serving.port();

      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order_id\": 103}"));
        outbox.enqueue(c, Work.of("mail-1", "mail", "{\"to\": 1}").queue("mail"));
        // No worker runs this kind: it waits, for the console's actions below.
        outbox.enqueue(c, Work.of("held-1", "unserved", "{}"));
        c.commit();
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  "done mail-7 queued"
                      .equals(
                          db.queryString(
                              "SELECT state || ' ' || receiver_ref || ' ' || milestone"
                                  + " FROM {schema}.work WHERE work_id = 'mail-1'")));
      assertThat(received).containsOnlyKeys("mail-1");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  "done"
                      .equals(
                          db.queryString(
                              "SELECT state FROM {schema}.work"
                                  + " WHERE work_id = 'order-103-ack'")));
      assertThat(
              db.queryString(
                  "SELECT registered_by || ' ' || dedup_horizon::text FROM {schema}.kind"
                      + " WHERE kind = 'order_received'"))
          .isEqualTo("serve-test 48:00:00");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM {schema}.work"
                              + " WHERE work_id LIKE 'pulse@%' AND state = 'done'")
                      >= 1);

      HttpClient anonymous = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      HttpResponse<String> health = get(anonymous, base + "/actuator/health");
      assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
      assertThat(health.body())
          .contains("\"status\":\"UP\"")
          .contains("\"relay\":{\"status\":\"UP\"")
          .contains("\"workers\":{\"status\":\"UP\"");
      assertLoopbackOnly(serving.port());
      HttpResponse<String> prometheus = get(anonymous, base + "/actuator/prometheus");
      assertThat(prometheus.statusCode()).isEqualTo(200);
      assertThat(prometheus.body()).contains("jvm_memory_used_bytes").contains("relay_");

      HttpResponse<String> console = get(anonymous, base + "/relay");
      assertThat(console.statusCode()).isEqualTo(302);
      assertThat(console.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));

      HttpClient browser =
          HttpClient.newBuilder()
              .cookieHandler(new CookieManager())
              .connectTimeout(Duration.ofSeconds(5))
              .build();
      HttpResponse<String> loginPage = get(browser, base + "/relay/login");
      assertThat(loginPage.statusCode()).isEqualTo(200);
      Matcher csrf = CSRF.matcher(loginPage.body());
      assertThat(csrf.find()).as(loginPage.body()).isTrue();
      HttpResponse<String> wrong = login(browser, base, "olga", csrf.group(1), "wrong");
      assertThat(wrong.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).contains("error"));
      csrf = CSRF.matcher(get(browser, base + "/relay/login").body());
      assertThat(csrf.find()).isTrue();
      HttpResponse<String> signedIn = login(browser, base, "olga", csrf.group(1), "s3cret-op");
      assertThat(signedIn.statusCode()).isEqualTo(302);
      assertThat(signedIn.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay").doesNotContain("error"));
      HttpResponse<String> overview = get(browser, base + "/relay");
      assertThat(overview.statusCode()).isEqualTo(200);
      assertThat(overview.body()).contains("order_received").contains("olga");
      assertThat(cancel(browser, base, "held-1").statusCode()).isNotEqualTo(403);
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'held-1'"))
          .isEqualTo("cancelled");
      assertThat(db.queryString("SELECT actor FROM {schema}.cancel_audit WHERE work_id = 'held-1'"))
          .isEqualTo("olga");

      // A viewer reads, and may not act.
      HttpClient viewer =
          HttpClient.newBuilder()
              .cookieHandler(new CookieManager())
              .connectTimeout(Duration.ofSeconds(5))
              .build();
      csrf = CSRF.matcher(get(viewer, base + "/relay/login").body());
      assertThat(csrf.find()).isTrue();
      assertThat(
              login(viewer, base, "vera", csrf.group(1), "s3cret-op")
                  .headers()
                  .firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).doesNotContain("error"));
      assertThat(get(viewer, base + "/relay").statusCode()).isEqualTo(200);
      assertThat(cancel(viewer, base, "order-103-ack").statusCode()).isEqualTo(403);
      assertThat(get(anonymous, base + "/actuator/env").statusCode()).isIn(401, 403, 404);
    } finally {
      receiver.stop(0);
    }
  }

  @Test
  void aJsonConfigOfEarlierReleasesStillServesAndTurnsTheConsoleOff(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path config = dir.resolve("old.json");
    Files.writeString(
        config,
        "{\"http_port\": 0, \"poll_interval\": \"200ms\", \"shutdown_grace\": \"5s\","
            + " \"kinds\": {\"tick\": {\"handler\": \"log\"}}, \"console\": {\"enabled\": false}}");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (Serving serving = serve(db, config, out)) {
      String base = "http://127.0.0.1:" + serving.port();
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      assertThat(get(client, base + "/actuator/health").statusCode()).isEqualTo(200);
      // No work yet: the kind's meters are there from the start, at zero, each saying what it is.
      String prometheus = get(client, base + "/actuator/prometheus").body();
      assertThat(prometheus)
          .contains("relay_claims_total{kind=\"tick\",queue=\"default\"} 0.0")
          .contains("relay_work_depth{kind=\"tick\",queue=\"default\",state=\"ready\"}")
          .contains("# HELP relay_claims_total Claims committed by this process");
      assertThat(prometheus.lines().filter(l -> l.startsWith("# HELP relay_")))
          .isNotEmpty()
          .allSatisfy(l -> assertThat(l.replaceFirst("^# HELP relay_\\w+", "")).as(l).isNotBlank());
      assertThat(get(client, base + "/relay").statusCode()).isIn(401, 403, 404);
      assertThat(get(client, base + "/relay/login").statusCode()).isIn(401, 403, 404);
      assertThat(out.toString()).doesNotContain("/relay");
      assertThat(serving.context().getEnvironment().getProperty("relay.poll-interval"))
          .isEqualTo("200ms");
    }
  }

  @Test
  void kindsNamedWithColonDotUnderscoreAndDashAreServedUnderExactlyThoseNames(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            """
            server: {port: 0}
            relay:
              poll-interval: 200ms
              shutdown-grace: 5s
              kinds:
                "[mail:v2]": {handler: log}
                "[audit.note]": {handler: log, max-attempts: 3}
                a_b-c: {handler: log}
              console: {enabled: false}
            """);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (Serving serving = serve(db, config, out)) {
      assertThat(out.toString()).contains("relay serve: kinds [mail:v2, audit.note, a_b-c]");
      assertThat(serving.context().getBean(RelayProperties.class).getKinds())
          .containsOnlyKeys("audit.note");
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        Outbox.builder()
            .schema(db.schema())
            .build()
            .enqueueAll(
                c,
                List.of(
                    Work.of("w-mail", "mail:v2", "{}"),
                    Work.of("w-audit", "audit.note", "{}"),
                    Work.of("w-abc", "a_b-c", "{}")));
        c.commit();
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'") == 3);
    }
  }

  @Test
  void refusesASchemaThatIsNotMigratedWithExitCodeOne(TestDatabase db, @TempDir Path dir)
      throws Exception {
    assertThat(refusal(db, dir, db.schema() + "_fresh"))
        .contains("is not migrated")
        .contains("--migrate");
  }

  @Test
  void refusesASchemaWithAnEditedMigrationWithExitCodeOneInOneLine(
      TestDatabase db, @TempDir Path dir) throws Exception {
    String edited = db.schema() + "_edited";
    try {
      dev.relay.Migrator.migrate(db.dataSource(), edited);
      db.execute("UPDATE " + edited + ".schema_version SET checksum = 'feed' WHERE version = 3");
      for (String[] more : new String[][] {{}, {"--migrate"}}) {
        String err = refusal(db, dir, edited, more);
        assertThat(err)
            .startsWith("relay serve: schema " + edited + " recorded version 3")
            .doesNotContain("\tat ");
        assertThat(err.lines()).hasSize(1);
      }
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + edited + " CASCADE");
    }
  }

  /**
   * Runs {@code relay serve} on {@code schema} with a minimal config, expects exit 1 with nothing
   * served, and returns its stderr.
   */
  private static String refusal(TestDatabase db, Path dir, String schema, String... more)
      throws IOException {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    ServeMain main =
        new ServeMain(InputStream.nullInputStream(), new PrintStream(new ByteArrayOutputStream()));
    int code = main.run(new PrintStream(err, true), serveArgs(db, config, schema, more));
    assertThat(code).as(err.toString()).isEqualTo(1);
    assertThat(main.serving).isNull();
    return err.toString();
  }

  /**
   * Starts {@code relay serve} in this JVM on the test's schema; its stdout goes to {@code out}.
   */
  static Serving serve(TestDatabase db, Path config, ByteArrayOutputStream out, String... more) {
    ServeMain main = new ServeMain(InputStream.nullInputStream(), new PrintStream(out, true));
    int code = main.run(System.err, serveArgs(db, config, db.schema(), more));
    assertThat(code).as(out.toString()).isZero();
    return main.serving;
  }

  /** {@code serve --config config --jdbc-url (db) --schema schema}, then {@code more}. */
  private static String[] serveArgs(TestDatabase db, Path config, String schema, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "serve",
                "--config",
                config.toString(),
                "--jdbc-url",
                db.jdbcUrl(),
                "--schema",
                schema));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  /** Nothing answers on this host's other addresses (when it has any). */
  private static void assertLoopbackOnly(int port) throws Exception {
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      for (InetAddress a : Collections.list(nic.getInetAddresses())) {
        if (a.isLoopbackAddress() || a.isLinkLocalAddress() || !(a instanceof Inet4Address)) {
          continue;
        }
        try (Socket s = new Socket()) {
          assertThatThrownBy(() -> s.connect(new InetSocketAddress(a, port), 2000))
              .as("connect to %s:%d", a, port)
              .isInstanceOf(IOException.class);
        }
      }
    }
  }

  /** Cancels {@code id} from the item page's form, with that page's CSRF token. */
  private static HttpResponse<String> cancel(HttpClient client, String base, String id)
      throws Exception {
    Matcher csrf = CSRF.matcher(get(client, base + "/relay/item?id=" + id).body());
    assertThat(csrf.find()).isTrue();
    return post(
        client,
        base + "/relay/item/cancel",
        Map.of("id", id, "reason", "test", "_csrf", csrf.group(1)));
  }

  private static HttpResponse<String> login(
      HttpClient client, String base, String user, String csrf, String password) throws Exception {
    return post(
        client,
        base + "/relay/login",
        Map.of("username", user, "password", password, "_csrf", csrf));
  }

  private static HttpResponse<String> post(HttpClient client, String url, Map<String, String> form)
      throws Exception {
    StringBuilder body = new StringBuilder();
    form.forEach(
        (k, v) ->
            body.append(body.length() == 0 ? "" : "&")
                .append(k)
                .append('=')
                .append(URLEncoder.encode(v, StandardCharsets.UTF_8)));
    return client.send(
        HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
    return client.send(
        HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
