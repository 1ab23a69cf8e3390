package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.RelayTracing;
import dev.relay.Work;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.http.HttpReply;
import dev.relay.spring.InboxTemplate;
import dev.relay.spring.RelayHttpReceivers;
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
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration;
import org.springframework.boot.micrometer.tracing.autoconfigure.NoopTracerAutoConfiguration;
import org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure.OpenTelemetryTracingAutoConfiguration;
import org.springframework.boot.opentelemetry.autoconfigure.OpenTelemetrySdkAutoConfiguration;
import org.springframework.http.HttpHeaders;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

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

  private List<SpanData> named(String name) {
    return exporter.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
  }

  /** Micrometer Tracing's OpenTelemetry bridge over the test's SDK, as Boot would declare it. */
  private Tracer bridge() {
    return new OtelTracer(sdk.getTracer("shop"), new OtelCurrentTraceContext(), event -> {});
  }

  @Test
  void afterBootsOwnTracingAutoConfigurationTheAttemptContinuesTheProducersTrace(TestDatabase db) {
    // Boot's auto-configurations by class (RelayAutoConfiguration names them in afterName):
    // sorted by name alone, dev.relay would come first and find no Tracer bean yet
    InMemorySpanExporter boot = InMemorySpanExporter.create();
    Contexts.on(db)
        .withConfiguration(
            AutoConfigurations.of(
                OpenTelemetrySdkAutoConfiguration.class,
                OpenTelemetryTracingAutoConfiguration.class,
                MicrometerTracingAutoConfiguration.class))
        .withUserConfiguration(Contexts.OneHandler.class)
        .withBean(SpanExporter.class, () -> boot)
        .withPropertyValues("management.tracing.sampling.probability=1.0")
        .run(
            context -> {
              assertThat(context).hasSingleBean(RelayTracing.class);
              Tracer tracer = context.getBean(Tracer.class);
              io.micrometer.tracing.Span checkout = tracer.nextSpan().name("checkout").start();
              Tracer.SpanInScope in = tracer.withSpan(checkout);
              try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                context.getBean(Outbox.class).enqueue(c, Work.of("w", "order_received", "{}"));
                c.commit();
              } finally {
                in.close();
                checkout.end();
              }
              SdkTracerProvider provider = context.getBean(SdkTracerProvider.class);
              await()
                  .atMost(Duration.ofSeconds(60))
                  .until(
                      () -> {
                        provider.forceFlush().join(10, TimeUnit.SECONDS); // a batch processor
                        return boot.getFinishedSpanItems().stream()
                            .anyMatch(s -> s.getName().equals("process default"));
                      });
              SpanData attempt =
                  boot.getFinishedSpanItems().stream()
                      .filter(s -> s.getName().equals("process default"))
                      .findFirst()
                      .orElseThrow();
              assertThat(attempt.getKind()).isEqualTo(SpanKind.CONSUMER);
              assertThat(attempt.getTraceId()).isEqualTo(checkout.context().traceId());
              assertThat(attempt.getParentSpanId()).isEqualTo(checkout.context().spanId());
              assertThat(attempt.getLinks()).hasSize(1);
            });
  }

  @Test
  void bootsTracingWithoutABridgeConfiguresNothing(TestDatabase db) {
    // Micrometer Tracing without OpenTelemetry or Brave: Boot's no-op Tracer, no Propagator
    Contexts.on(db)
        .withConfiguration(
            AutoConfigurations.of(
                MicrometerTracingAutoConfiguration.class, NoopTracerAutoConfiguration.class))
        .run(
            context -> {
              assertThat(context).hasSingleBean(Tracer.class);
              assertThat(context).doesNotHaveBean(RelayTracing.class);
            });
  }

  @Test
  void theInboxTemplateAndTheHttpReceiversContinueTheSendersTrace(TestDatabase db) {
    Tracer tracer = bridge();
    Propagator propagator = new OtelPropagator(sdk.getPropagators(), sdk.getTracer("shop"));
    Map<String, String> seen = new ConcurrentHashMap<>();
    Contexts.on(db)
        .withConfiguration(AutoConfigurations.of(RelayWebAutoConfiguration.class))
        .withUserConfiguration(Contexts.Jdbc.class)
        .withBean(Tracer.class, () -> tracer)
        .withBean(Propagator.class, () -> propagator)
        .run(
            context -> {
              Span sender = sdk.getTracer("shop").spanBuilder("send").startSpan();
              String traceparent =
                  "00-"
                      + sender.getSpanContext().getTraceId()
                      + "-"
                      + sender.getSpanContext().getSpanId()
                      + "-01";
              sender.end();
              Map<String, String> message = Map.of("traceparent", traceparent);

              InboxTemplate inbox = context.getBean(InboxTemplate.class);
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(DataSourceTransactionManager.class));
              InboxResult r =
                  tx.execute(
                      s ->
                          inbox.process(
                              "billing",
                              "order-103-bill",
                              "{}",
                              message::get,
                              c -> {
                                seen.put("inbox", Span.current().getSpanContext().getSpanId());
                                return "{}";
                              }));
              assertThat(r.status()).isEqualTo(InboxResult.Status.APPLIED);

              HttpHeaders headers = new HttpHeaders();
              headers.add("Idempotency-Key", "order-103-ack");
              headers.add("traceparent", traceparent);
              context
                  .getBean(RelayHttpReceivers.class)
                  .handle(
                      "mailer",
                      headers,
                      "{}",
                      (c, d) -> {
                        seen.put("http", Span.current().getSpanContext().getSpanId());
                        return HttpReply.json(200, "{}");
                      });

              SpanData consumed = named("process billing").get(0);
              assertThat(consumed.getKind()).isEqualTo(SpanKind.CONSUMER);
              assertThat(consumed.getTraceId()).isEqualTo(sender.getSpanContext().getTraceId());
              assertThat(consumed.getParentSpanId()).isEqualTo(sender.getSpanContext().getSpanId());
              assertThat(consumed.getSpanId()).isEqualTo(seen.get("inbox"));
              assertThat(consumed.getAttributes().asMap().toString())
                  .contains("messaging.message.id=order-103-bill")
                  .contains("relay.receiver=billing");
              SpanData received = named("receive http").get(0);
              assertThat(received.getKind()).isEqualTo(SpanKind.SERVER);
              assertThat(received.getParentSpanId()).isEqualTo(sender.getSpanContext().getSpanId());
              assertThat(received.getSpanId()).isEqualTo(seen.get("http"));
            });
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
                                      "SELECT state FROM {schema}.work WHERE work_id = 'w'")));
              assertThat(db.queryString("SELECT trace_context FROM {schema}.work")).isNull();
            });
  }
}
