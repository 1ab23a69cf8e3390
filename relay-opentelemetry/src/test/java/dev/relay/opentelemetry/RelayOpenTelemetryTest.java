package dev.relay.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayMdc;
import dev.relay.Work;
import dev.relay.receiver.http.HttpReceiver;
import dev.relay.receiver.http.HttpReply;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * One trace from the producer's span through a retried attempt, a lease takeover and an HTTP
 * delivery to the receiver's span, read from the OpenTelemetry SDK's in-memory exporter.
 */
@RelayDatabaseTest
class RelayOpenTelemetryTest {
  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private final TestTelemetry otel = new TestTelemetry();
  private final InMemorySpanExporter exporter = otel.exporter;
  private Tracer appTracer;
  private RelayOpenTelemetry tracing;
  private TestDatabase db;
  private Outbox outbox;
  private HttpServer server;
  private Relay relay;

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
    appTracer = otel.sdk.getTracer("shop");
    tracing = RelayOpenTelemetry.create(otel.sdk);
    outbox = Outbox.builder().schema(db.schema()).tracing(tracing).build();
  }

  @AfterEach
  void tearDown() {
    if (relay != null) {
      relay.close();
    }
    if (server != null) {
      server.stop(0);
    }
    otel.close();
  }

  private void enqueue(Work work) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, work);
      c.commit();
    }
  }

  /** An HTTP receiver with Relay's HttpReceiver, continuing the sender's trace. */
  private URI startReceiver(Map<String, String> seen) throws Exception {
    HttpReceiver receiver =
        HttpReceiver.builder(db.dataSource())
            .schema(db.schema())
            .consumer("mailer")
            .tracing(tracing)
            .build();
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/mail",
        exchange -> {
          String body =
              new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
          HttpReply reply =
              receiver.handle(
                  exchange.getRequestHeaders()::getFirst,
                  body,
                  (tx, delivery) -> {
                    seen.put("receiverSpan", Span.current().getSpanContext().getSpanId());
                    return HttpReply.json(200, "{\"email_id\": \"mail-1\"}");
                  });
          byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", reply.contentType());
          exchange.sendResponseHeaders(reply.status(), out.length);
          try (OutputStream os = exchange.getResponseBody()) {
            os.write(out);
          }
        });
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/mail");
  }

  private String state(String workId) throws Exception {
    return db.queryString("SELECT state FROM {schema}.outbox WHERE work_id = '" + workId + "'");
  }

  /** Ends this attempt's lease on the database clock, as if its worker had been cut off. */
  private void expireLease(String workId) throws Exception {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE "
                    + db.schema()
                    + ".outbox SET lease_until = clock_timestamp() - interval '1 second'"
                    + " WHERE work_id = ?")) {
      ps.setString(1, workId);
      ps.executeUpdate();
    }
  }

  private static List<SpanData> named(List<SpanData> spans, String name) {
    return spans.stream().filter(s -> s.getName().equals(name)).toList();
  }

  private static List<String> eventNames(SpanData span) {
    return span.getEvents().stream().map(EventData::getName).toList();
  }

  @Test
  void oneTraceFromTheProducerThroughARetryAndATakeoverToTheHttpReceiver() throws Exception {
    Map<String, String> seen = new ConcurrentHashMap<>();
    URI mail = startReceiver(seen);
    HttpTransport http =
        HttpTransport.builder()
            .route(HttpRoute.of("ack", mail).withReceiverRefField("email_id"))
            .build();
    Span checkout = appTracer.spanBuilder("checkout").startSpan();
    Scope current = checkout.makeCurrent();
    try {
      enqueue(Work.of("order-103-ack", "ack", "{\"order\": 103}"));
    } finally {
      current.close();
      checkout.end();
    }

    relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(100))
            .lease(Duration.ofSeconds(2))
            .renewInterval(Duration.ofMillis(200))
            .concurrency(2)
            .tracing(tracing)
            .handle(
                "ack",
                KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(10), Duration.ofMillis(50)),
                claim -> {
                  seen.put("mdc" + claim.generation(), String.valueOf(MDC.getCopyOfContextMap()));
                  switch (claim.attempt()) {
                    case 1:
                      return Outcome.retry("mailer busy", Outcome.Effect.NOT_DELIVERED);
                    case 2:
                      // cut off: the lease ends, a renewal is refused, a new claim takes over
                      expireLease(claim.workId());
                      await().atMost(PATIENCE).until(claim::isLeaseLost);
                      await().atMost(PATIENCE).until(() -> seen.containsKey("receiverSpan"));
                      return Outcome.done(); // refused: a stale write
                    default:
                      return http.handle(claim);
                  }
                })
            .build();
    relay.start();

    await()
        .atMost(PATIENCE)
        .until(
            () ->
                "done".equals(state("order-103-ack"))
                    && named(exporter.getFinishedSpanItems(), "process default").size() == 3);
    List<SpanData> spans = exporter.getFinishedSpanItems();
    SpanData producer = named(spans, "checkout").get(0);
    List<SpanData> attempts =
        named(spans, "process default").stream()
            .sorted(
                (a, b) ->
                    Long.compare(
                        a.getAttributes().get(RelayOpenTelemetry.GENERATION),
                        b.getAttributes().get(RelayOpenTelemetry.GENERATION)))
            .toList();
    String trace = producer.getTraceId();
    for (SpanData a : attempts) {
      assertThat(a.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(a.getTraceId()).isEqualTo(trace);
      assertThat(a.getParentSpanId()).isEqualTo(producer.getSpanId());
      assertThat(a.getLinks()).hasSize(1);
      assertThat(a.getLinks().get(0).getSpanContext().getSpanId()).isEqualTo(producer.getSpanId());
      assertThat(a.getAttributes().get(RelayOpenTelemetry.MESSAGE_ID)).isEqualTo("order-103-ack");
      assertThat(a.getAttributes().get(RelayOpenTelemetry.KIND)).isEqualTo("ack");
      assertThat(a.getAttributes().get(RelayOpenTelemetry.DESTINATION)).isEqualTo("default");
      assertThat(a.getAttributes().get(RelayOpenTelemetry.MESSAGING_SYSTEM)).isEqualTo("relay");
    }
    SpanData retried = attempts.get(0);
    SpanData cutOff = attempts.get(1);
    SpanData takeover = attempts.get(2);
    assertThat(retried.getAttributes().get(RelayOpenTelemetry.OUTCOME)).isEqualTo("retry");
    assertThat(retried.getAttributes().get(RelayOpenTelemetry.ATTEMPT)).isEqualTo(1L);
    assertThat(eventNames(retried)).containsExactly("relay.retry");
    assertThat(cutOff.getAttributes().get(RelayOpenTelemetry.GENERATION)).isEqualTo(2L);
    assertThat(cutOff.getAttributes().get(RelayOpenTelemetry.ENDING)).isEqualTo("lease_expired");
    assertThat(eventNames(cutOff)).contains("relay.renew_refused", "relay.stale_write");
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.RECLAIMED)).isTrue();
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.OUTCOME)).isEqualTo("done");
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.GENERATION)).isEqualTo(3L);

    SpanData received = named(spans, "receive http").get(0);
    assertThat(received.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(received.getTraceId()).isEqualTo(trace);
    assertThat(received.getParentSpanId()).isEqualTo(takeover.getSpanId());
    assertThat(received.getSpanId()).isEqualTo(seen.get("receiverSpan"));

    assertThat(seen.get("mdc1"))
        .contains(RelayMdc.WORK_ID + "=order-103-ack")
        .contains(RelayMdc.KIND + "=ack")
        .contains(RelayMdc.GENERATION + "=1")
        .contains(RelayMdc.TRACE_ID + "=" + trace);
  }

  @Test
  void workEnqueuedWithoutASpanGetsANewRoot() throws Exception {
    enqueue(Work.of("w", "k", "{}"));
    Map<String, String> seen = new ConcurrentHashMap<>();

    relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(100))
            .tracing(tracing)
            .handle(
                "k",
                claim -> {
                  seen.put("trace", Span.current().getSpanContext().getTraceId());
                  seen.put("mdc", String.valueOf(MDC.get(RelayMdc.TRACE_ID)));
                  return Outcome.done();
                })
            .build();
    relay.start();

    await()
        .atMost(PATIENCE)
        .until(() -> named(exporter.getFinishedSpanItems(), "process default").size() == 1);
    SpanData attempt = named(exporter.getFinishedSpanItems(), "process default").get(0);
    assertThat(attempt.getParentSpanContext().isValid()).isFalse();
    assertThat(attempt.getLinks()).isEmpty();
    assertThat(attempt.getTraceId()).isEqualTo(seen.get("trace")).isEqualTo(seen.get("mdc"));
    assertThat(attempt.getAttributes().get(RelayOpenTelemetry.OUTCOME)).isEqualTo("done");
  }
}
