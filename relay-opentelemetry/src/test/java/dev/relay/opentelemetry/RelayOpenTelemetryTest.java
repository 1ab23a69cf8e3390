package dev.relay.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
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
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import dev.relay.transport.nats.NatsRoute;
import dev.relay.transport.nats.NatsTransport;
import dev.relay.transport.rabbitmq.RabbitInbox;
import dev.relay.transport.rabbitmq.RabbitRoute;
import dev.relay.transport.rabbitmq.RabbitTransport;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.StreamConfiguration;
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
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * One trace from the producer's span through a retried attempt, a lease takeover (whose cut-off
 * attempt's refused write is an event on its span) and the deliveries to an HTTP receiver, a
 * RabbitMQ consumer and a NATS JetStream consumer (the machine's brokers), read from the
 * OpenTelemetry SDK's in-memory exporter.
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
    return db.queryString("SELECT state FROM {schema}.work WHERE work_id = '" + workId + "'");
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

  /** The machine's RabbitMQ (127.0.0.1:5672). */
  private static ConnectionFactory rabbitFactory() {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost("127.0.0.1");
    factory.setPort(5672);
    factory.setUsername("guest");
    factory.setPassword("guest");
    return factory;
  }

  /** The machine's NATS JetStream (127.0.0.1:4222). */
  private static io.nats.client.Options natsOptions() {
    return new io.nats.client.Options.Builder()
        .server("nats://127.0.0.1:4222")
        .connectionTimeout(Duration.ofSeconds(5))
        .build();
  }

  private static Outcome thenIfDone(Outcome first, java.util.concurrent.Callable<Outcome> next)
      throws Exception {
    return first instanceof Outcome.Done ? next.call() : first;
  }

  @Test
  // jnats' Connection.close() declares InterruptedException; the test method throws Exception
  @SuppressWarnings("try")
  void oneTraceFromTheProducerThroughARetryAndATakeoverToTheHttpRabbitAndNatsReceivers()
      throws Exception {
    Map<String, String> seen = new ConcurrentHashMap<>();
    URI mail = startReceiver(seen);
    String id = UUID.randomUUID().toString().replace("-", "");
    String queue = "relay-test-trace-" + id;
    String stream = "relay-test-trace-" + id;
    String subject = "relay-test-trace." + id;
    ConnectionFactory factory = rabbitFactory();
    try (com.rabbitmq.client.Connection rabbitConnection = factory.newConnection("relay-trace");
        io.nats.client.Connection nats = Nats.connect(natsOptions());
        RabbitTransport rabbit =
            RabbitTransport.builder(factory).route(RabbitRoute.toQueue("ack", queue)).build();
        NatsTransport jetStream =
            NatsTransport.builder(natsOptions())
                .route(new NatsRoute("ack", stream, subject, Duration.ofMinutes(2)))
                .build()) {
      Channel channel = rabbitConnection.createChannel();
      channel.queueDeclare(queue, true, false, false, null);
      JetStreamManagement jsm = nats.jetStreamManagement();
      jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subject).build());
      try {
        // the RabbitMQ consumer: Relay's inbox helper, continuing the trace of each delivery
        RabbitInbox.of(
                BrokerInbox.builder(db.dataSource())
                    .schema(db.schema())
                    .consumer("warehouse")
                    .tracing(tracing)
                    .build(),
                (tx, delivery) ->
                    seen.put("rabbitSpan", Span.current().getSpanContext().getSpanId()))
            .consume(rabbitConnection.createChannel(), queue, 10);
        jetStream.start();
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
                      seen.put(
                          "mdc" + claim.generation(), String.valueOf(MDC.getCopyOfContextMap()));
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
                          // the takeover delivers over HTTP, then to RabbitMQ and NATS
                          return thenIfDone(
                              http.handle(claim),
                              () ->
                                  thenIfDone(
                                      rabbit.handleAll(List.of(claim)).get(0),
                                      () -> jetStream.handleAll(List.of(claim)).get(0)));
                      }
                    })
                .build();
        relay.start();

        await()
            .atMost(PATIENCE)
            .until(
                () ->
                    "done".equals(state("order-103-ack"))
                        && named(exporter.getFinishedSpanItems(), "process default").size() == 3
                        && named(exporter.getFinishedSpanItems(), "process warehouse").size() == 1);
        // the NATS consumer: a pull subscription, each message through Relay's inbox helper
        BrokerInbox ledger =
            BrokerInbox.builder(db.dataSource())
                .schema(db.schema())
                .consumer("ledger")
                .tracing(tracing)
                .build();
        JetStreamSubscription sub =
            nats.jetStream()
                .subscribe(
                    subject,
                    PullSubscribeOptions.builder().stream(stream).durable("ledger").build());
        List<Message> got = new java.util.ArrayList<>();
        await()
            .atMost(PATIENCE)
            .until(
                () -> {
                  got.addAll(sub.fetch(1, Duration.ofSeconds(1)));
                  return !got.isEmpty();
                });
        Message m = got.get(0);
        BrokerInbox.Result applied =
            ledger.apply(
                name -> m.getHeaders().getFirst(name),
                new String(m.getData(), StandardCharsets.UTF_8),
                (tx, delivery) ->
                    seen.put("natsSpan", Span.current().getSpanContext().getSpanId()));
        m.ack();
        assertThat(applied.status()).isEqualTo(BrokerInbox.Status.APPLIED);
      } finally {
        channel.queueDelete(queue);
        jsm.deleteStream(stream);
      }
    }

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
    // the stale write: an event on the cut-off attempt's own span, which it ends
    assertThat(cutOff.getAttributes().get(RelayOpenTelemetry.GENERATION)).isEqualTo(2L);
    assertThat(cutOff.getAttributes().get(RelayOpenTelemetry.ENDING)).isEqualTo("lease_expired");
    assertThat(cutOff.getAttributes().get(RelayOpenTelemetry.OUTCOME)).isNull();
    // (a refused renewal adds relay.renew_refused before it when the renewer noticed first; the
    // lease may also be known lost from its local deadline, so that event is not asserted)
    assertThat(eventNames(cutOff)).contains("relay.stale_write");
    assertThat(
            cutOff.getEvents().stream()
                .filter(e -> e.getName().equals("relay.stale_write"))
                .findFirst()
                .orElseThrow()
                .getAttributes()
                .get(RelayOpenTelemetry.OPERATION))
        .isNotBlank();
    assertThat(eventNames(takeover)).doesNotContain("relay.stale_write");
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.RECLAIMED)).isTrue();
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.OUTCOME)).isEqualTo("done");
    assertThat(takeover.getAttributes().get(RelayOpenTelemetry.GENERATION)).isEqualTo(3L);

    SpanData received = named(spans, "receive http").get(0);
    assertThat(received.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(received.getTraceId()).isEqualTo(trace);
    assertThat(received.getParentSpanId()).isEqualTo(takeover.getSpanId());
    assertThat(received.getSpanId()).isEqualTo(seen.get("receiverSpan"));

    for (String[] broker :
        new String[][] {{"process warehouse", "rabbitSpan"}, {"process ledger", "natsSpan"}}) {
      SpanData consumed = named(spans, broker[0]).get(0);
      assertThat(consumed.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(consumed.getTraceId()).isEqualTo(trace);
      assertThat(consumed.getParentSpanId()).isEqualTo(takeover.getSpanId());
      assertThat(consumed.getSpanId()).isEqualTo(seen.get(broker[1]));
      assertThat(consumed.getAttributes().get(RelayOpenTelemetry.MESSAGE_ID))
          .isEqualTo("order-103-ack");
    }

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
