package dev.relay.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.rabbitmq.RabbitInbox;
import dev.relay.transport.rabbitmq.RabbitRoute;
import dev.relay.transport.rabbitmq.RabbitTransport;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** The trace continues across the machine's RabbitMQ: transport headers, then the inbox's span. */
@RelayDatabaseTest
class RabbitTraceTest {
  @Test
  void theConsumersSpanContinuesTheAttemptThatPublished(TestDatabase db) throws Exception {
    TestTelemetry otel = new TestTelemetry();
    RelayOpenTelemetry tracing = RelayOpenTelemetry.create(otel.sdk);
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost("127.0.0.1");
    factory.setPort(5672);
    factory.setUsername("guest");
    factory.setPassword("guest");
    String queue = "relay-test-trace-" + UUID.randomUUID();
    Map<String, String> seen = new ConcurrentHashMap<>();

    try (com.rabbitmq.client.Connection admin = factory.newConnection("relay-test-trace");
        RabbitTransport rabbit =
            RabbitTransport.builder(factory).route(RabbitRoute.toQueue("ship", queue)).build()) {
      Channel channel = admin.createChannel();
      channel.queueDeclare(queue, true, false, false, null);
      BrokerInbox inbox =
          BrokerInbox.builder(db.dataSource())
              .schema(db.schema())
              .consumer("warehouse")
              .tracing(tracing)
              .build();
      RabbitInbox.of(
              inbox,
              (tx, delivery) ->
                  seen.put("consumerSpan", Span.current().getSpanContext().getSpanId()))
          .consume(admin.createChannel(), queue, 10);

      Span checkout = otel.sdk.getTracer("shop").spanBuilder("checkout").startSpan();
      Scope current = checkout.makeCurrent();
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        Outbox.builder()
            .schema(db.schema())
            .tracing(tracing)
            .build()
            .enqueue(c, Work.of("ship-103", "ship", "{\"order\": 103}"));
        c.commit();
      } finally {
        current.close();
        checkout.end();
      }
      Relay relay =
          Relay.builder(db.dataSource())
              .schema(db.schema())
              .pollInterval(Duration.ofMillis(100))
              .tracing(tracing)
              .handle("ship", rabbit)
              .build();
      relay.start();
      try {
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    otel.spans("process warehouse").size() == 1
                        && otel.spans("process default").size() == 1);
      } finally {
        relay.close();
        channel.queueDelete(queue);
      }

      SpanData attempt = otel.spans("process default").get(0);
      SpanData consumed = otel.spans("process warehouse").get(0);
      assertThat(attempt.getTraceId()).isEqualTo(checkout.getSpanContext().getTraceId());
      assertThat(consumed.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(consumed.getTraceId()).isEqualTo(attempt.getTraceId());
      assertThat(consumed.getParentSpanId()).isEqualTo(attempt.getSpanId());
      assertThat(consumed.getSpanId()).isEqualTo(seen.get("consumerSpan"));
      assertThat(consumed.getAttributes().get(RelayOpenTelemetry.MESSAGE_ID)).isEqualTo("ship-103");
    } finally {
      otel.close();
    }
  }
}
