package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.relay.receiver.http.HttpReceiver;
import dev.relay.receiver.http.HttpReply;
import dev.relay.receiver.http.RelayHeaders;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class HttpReceiverTest {
  private static final String ACK = "{\"order_id\":103,\"total\":29.00}";

  private TestDatabase db;
  private HttpServer server;
  private final HttpClient client = HttpClient.newHttpClient();
  private final AtomicInteger effects = new AtomicInteger();
  private final CountDownLatch effectStarted = new CountDownLatch(1);
  private final CountDownLatch releaseEffect = new CountDownLatch(1);
  private volatile boolean holdEffect;

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    db.execute("CREATE TABLE {schema}.mail (message_id text PRIMARY KEY)");
    HttpReceiver receiver =
        HttpReceiver.builder(db.dataSource()).schema(db.schema()).consumer("mailer").build();
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext(
        "/deliveries",
        exchange -> {
          String body =
              new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
          HttpReply reply =
              receiver.handle(
                  exchange.getRequestHeaders()::getFirst,
                  body,
                  (tx, delivery) -> {
                    effects.incrementAndGet();
                    effectStarted.countDown();
                    if (holdEffect) {
                      releaseEffect.await(1, TimeUnit.MINUTES);
                    }
                    try (PreparedStatement ps =
                        tx.prepareStatement("INSERT INTO " + db.schema() + ".mail VALUES (?)")) {
                      ps.setString(1, delivery.messageId());
                      ps.executeUpdate();
                    }
                    return HttpReply.json(202, "{\"mail_ref\":\"m-" + delivery.messageId() + "\"}");
                  });
          byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", reply.contentType());
          reply.headers().forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
          exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
          try (OutputStream os = exchange.getResponseBody()) {
            os.write(out);
          }
        });
    server.start();
  }

  @AfterEach
  void tearDown() {
    releaseEffect.countDown();
    server.stop(0);
  }

  private HttpRequest request(Map<String, String> headers, String body) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/deliveries"))
            .timeout(Duration.ofMinutes(1))
            .POST(HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(b::header);
    return b.build();
  }

  private HttpResponse<String> post(Map<String, String> headers, String body) throws Exception {
    return client.send(request(headers, body), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aConcurrentRequestWithTheSameKeyGets409WithRetryAfterThenTheSavedResponse()
      throws Exception {
    holdEffect = true;
    Map<String, String> key = Map.of(RelayHeaders.IDEMPOTENCY_KEY, "order-103-ack");
    CompletableFuture<HttpResponse<String>> first =
        client.sendAsync(request(key, ACK), HttpResponse.BodyHandlers.ofString());
    assertThat(effectStarted.await(1, TimeUnit.MINUTES)).isTrue();

    HttpResponse<String> concurrent = post(key, ACK);
    assertThat(concurrent.statusCode()).isEqualTo(409);
    assertThat(concurrent.headers().firstValue("Retry-After")).contains("1");

    releaseEffect.countDown();
    HttpResponse<String> done = first.get(1, TimeUnit.MINUTES);
    assertThat(done.statusCode()).isEqualTo(202);
    assertThat(done.body()).isEqualTo("{\"mail_ref\":\"m-order-103-ack\"}");

    HttpResponse<String> repeat = post(key, "{\"total\":29.0, \"order_id\":103}");
    assertThat(repeat.statusCode()).isEqualTo(202);
    assertThat(repeat.body()).isEqualTo(done.body());
    assertThat(repeat.headers().firstValue(RelayHeaders.REPLAYED)).contains("true");
    assertThat(effects).hasValue(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.mail")).isEqualTo(1);
  }

  @Test
  void refusalsAreTypedAndChangeNothing() throws Exception {
    assertThat(post(Map.of(), ACK).statusCode()).as("no key").isEqualTo(400);
    assertThat(post(Map.of(RelayHeaders.IDEMPOTENCY_KEY, "k-1"), "{oops").statusCode())
        .as("not JSON")
        .isEqualTo(400);
    assertThat(
            post(Map.of(RelayHeaders.IDEMPOTENCY_KEY, "k-1", RelayHeaders.FENCING_TOKEN, "7"), ACK)
                .statusCode())
        .as("token without resource")
        .isEqualTo(400);

    Map<String, String> eight =
        Map.of(
            RelayHeaders.IDEMPOTENCY_KEY, "settings-8",
            RelayHeaders.FENCING_RESOURCE, "mailbox-1",
            RelayHeaders.FENCING_TOKEN, "8");
    assertThat(post(eight, ACK).statusCode()).isEqualTo(202);
    Map<String, String> seven =
        Map.of(
            RelayHeaders.IDEMPOTENCY_KEY, "settings-7",
            RelayHeaders.FENCING_RESOURCE, "mailbox-1",
            RelayHeaders.FENCING_TOKEN, "7");
    HttpResponse<String> stale = post(seven, ACK);
    assertThat(stale.statusCode()).isEqualTo(412);
    assertThat(stale.body()).contains("stale fencing token 7");

    HttpResponse<String> changed = post(eight, ACK.replace("29.00", "31.00"));
    assertThat(changed.statusCode()).isEqualTo(422);
    assertThat(changed.body()).contains("settings-8");

    assertThat(effects).hasValue(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isEqualTo(1);
  }

  @Test
  void headerLookupIsTheOnlyServerDependency() throws SQLException {
    HttpReceiver receiver =
        HttpReceiver.builder(db.dataSource()).schema(db.schema()).consumer("mailer").build();
    Map<String, String> headers = Map.of(RelayHeaders.IDEMPOTENCY_KEY, "plain-call");
    HttpReply reply =
        receiver.handle(headers::get, "{}", (tx, d) -> HttpReply.json(200, "{\"ok\":true}"));
    assertThat(reply.status()).isEqualTo(200);
    HttpReply again = receiver.handle(headers::get, "{}", (tx, d) -> HttpReply.json(500, "{}"));
    assertThat(again.status()).isEqualTo(200);
    assertThat(again.body()).isEqualTo("{\"ok\":true}");
  }

  @Test
  void aStoredReplyComesBackCharacterForCharacter() {
    HttpReceiver receiver =
        HttpReceiver.builder(db.dataSource()).schema(db.schema()).consumer("mailer").build();
    String awkward = "line 1\nline \"2\"\t\\ caf\u00e9 \u0001 \ud83d\udce8 </>";
    Map<String, String> headers = Map.of(RelayHeaders.IDEMPOTENCY_KEY, "awkward");
    HttpReply first =
        receiver.handle(
            headers::get,
            "{}",
            (tx, d) -> new HttpReply(201, "text/plain; charset=utf-8", awkward, Map.of()));
    HttpReply replay = receiver.handle(headers::get, "{}", (tx, d) -> HttpReply.text(500, "no"));
    assertThat(first.body()).isEqualTo(awkward);
    assertThat(replay.status()).isEqualTo(201);
    assertThat(replay.contentType()).isEqualTo("text/plain; charset=utf-8");
    assertThat(replay.body()).isEqualTo(awkward);
  }
}
