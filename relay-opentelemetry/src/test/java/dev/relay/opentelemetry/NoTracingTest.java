package dev.relay.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayMdc;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * Without a tracing hook (the default) tracing costs nothing: even with the OpenTelemetry SDK in
 * the application and a span current at enqueue, nothing is stored with the work, no span is
 * recorded for an attempt or a delivery, no trace header is read, and the handler runs in no span.
 */
@RelayDatabaseTest
class NoTracingTest {
  @Test
  void withoutATracingHookNothingIsStoredRecordedOrRead(TestDatabase db) throws Exception {
    try (TestTelemetry otel = new TestTelemetry()) {
      Span checkout = otel.sdk.getTracer("shop").spanBuilder("checkout").startSpan();
      Scope current = checkout.makeCurrent();
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        Outbox.builder().schema(db.schema()).build().enqueue(c, Work.of("w", "k", "{}"));
        c.commit();
      } finally {
        current.close();
        checkout.end();
      }
      assertThat(db.queryString("SELECT trace_context::text FROM {schema}.work")).isNull();

      Map<String, String> seen = new ConcurrentHashMap<>();
      try (Relay relay =
          Relay.builder(db.dataSource())
              .schema(db.schema())
              .pollInterval(Duration.ofMillis(100))
              .handle(
                  "k",
                  claim -> {
                    seen.put("span", String.valueOf(Span.current().getSpanContext().isValid()));
                    seen.put("stored", claim.traceContext().toString());
                    seen.put("call", claim.callTraceContext().toString());
                    seen.put("mdcTrace", String.valueOf(MDC.get(RelayMdc.TRACE_ID)));
                    return Outcome.done();
                  })
              .build()) {
        relay.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> seen.size() == 4);
      }
      assertThat(seen)
          .containsEntry("span", "false")
          .containsEntry("stored", "{}")
          .containsEntry("call", "{}")
          .containsEntry("mdcTrace", "null");

      // a delivery carrying a traceparent: the inbox never asks for it
      Set<String> asked = ConcurrentHashMap.newKeySet();
      Map<String, String> headers =
          Map.of(
              BrokerHeaders.WORK_ID,
              "order-1",
              "traceparent",
              "00-" + checkout.getSpanContext().getTraceId() + "-00f067aa0ba902b7-01");
      BrokerInbox.Result r =
          BrokerInbox.builder(db.dataSource())
              .schema(db.schema())
              .consumer("ledger")
              .build()
              .apply(
                  name -> {
                    asked.add(name);
                    return headers.get(name);
                  },
                  "{}",
                  (tx, delivery) -> {});
      assertThat(r.status()).isEqualTo(BrokerInbox.Status.APPLIED);
      assertThat(asked).doesNotContainAnyElementsOf(BrokerHeaders.TRACE_HEADERS);

      List<SpanData> spans = otel.exporter.getFinishedSpanItems();
      assertThat(spans).extracting(SpanData::getName).containsExactly("checkout");
    }
  }
}
