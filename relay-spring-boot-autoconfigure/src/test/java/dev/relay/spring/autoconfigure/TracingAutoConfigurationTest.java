package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.RelayTracing;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.micrometer.tracing.propagation.Propagator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The starter traces through Micrometer Tracing when the application has it (here its OpenTelemetry
 * bridge over the SDK, read from the in-memory exporter), and configures nothing when it does not.
 */
@RelayDatabaseTest
class TracingAutoConfigurationTest {
  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final SdkTracerProvider provider =
      SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  private final OpenTelemetrySdk sdk =
      OpenTelemetrySdk.builder()
          .setTracerProvider(provider)
          .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
          .build();

  @AfterEach
  void closeSdk() {
    provider.close();
  }

  private List<SpanData> attempts() {
    return exporter.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals("process default"))
        .toList();
  }

  @Test
  void withMicrometerTracingEachAttemptContinuesTheProducersTrace(TestDatabase db) {
    io.opentelemetry.api.trace.Tracer otel = sdk.getTracer("shop");
    Tracer tracer = new OtelTracer(otel, new OtelCurrentTraceContext(), event -> {});
    Propagator propagator = new OtelPropagator(sdk.getPropagators(), otel);

    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .withBean(Tracer.class, () -> tracer)
        .withBean(Propagator.class, () -> propagator)
        .run(
            context -> {
              assertThat(context).hasSingleBean(RelayTracing.class);
              Span checkout = otel.spanBuilder("checkout").startSpan();
              Scope current = checkout.makeCurrent();
              try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                context.getBean(Outbox.class).enqueue(c, Work.of("w", "order_received", "{}"));
                c.commit();
              } finally {
                current.close();
                checkout.end();
              }

              await().atMost(Duration.ofSeconds(60)).until(() -> attempts().size() == 1);
              SpanData attempt = attempts().get(0);
              assertThat(attempt.getKind()).isEqualTo(SpanKind.CONSUMER);
              assertThat(attempt.getTraceId()).isEqualTo(checkout.getSpanContext().getTraceId());
              assertThat(attempt.getParentSpanId())
                  .isEqualTo(checkout.getSpanContext().getSpanId());
              assertThat(attempt.getLinks()).hasSize(1);
              assertThat(attempt.getAttributes().asMap().toString())
                  .contains("messaging.message.id=w")
                  .contains("relay.kind=order_received")
                  .contains("relay.outcome=done");
            });
  }

  @Test
  void withoutMicrometerTracingNothingIsTracedAndWorkStillRuns(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .run(
            context -> {
              assertThat(context).doesNotHaveBean(RelayTracing.class);
              try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                context.getBean(Outbox.class).enqueue(c, Work.of("w", "order_received", "{}"));
                c.commit();
              }
              await()
                  .atMost(Duration.ofSeconds(60))
                  .until(
                      () ->
                          "done"
                              .equals(
                                  db.queryString(
                                      "SELECT state FROM {schema}.outbox WHERE work_id = 'w'")));
              assertThat(db.queryString("SELECT trace_context FROM {schema}.outbox")).isNull();
            });
  }
}
