package dev.relay.opentelemetry;

import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;

/** The OpenTelemetry SDK with W3C propagation and an in-memory exporter, for one test. */
final class TestTelemetry implements AutoCloseable {
  final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  final SdkTracerProvider provider =
      SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  final OpenTelemetrySdk sdk =
      OpenTelemetrySdk.builder()
          .setTracerProvider(provider)
          .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
          .build();

  /** The finished spans named {@code name}, in the order they ended. */
  List<SpanData> spans(String name) {
    return exporter.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
  }

  @Override
  public void close() {
    provider.close();
  }
}
