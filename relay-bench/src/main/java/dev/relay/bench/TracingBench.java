package dev.relay.bench;

import dev.relay.Claim;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.RelayTracing;
import dev.relay.Work;
import dev.relay.opentelemetry.RelayOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Tracing's cost on burn-down, as a paired comparison in one process: the same burn-down (work
 * enqueued, then one runtime at its defaults with a no-op handler runs it all) without a tracing
 * hook and with {@code relay-opentelemetry} over the OpenTelemetry SDK (every span sampled, sent
 * through a batch processor to an exporter that drops them), alternating ABBA so that both see the
 * same load, after two unmeasured pairs of warm-up. Run: {@code java -cp <bench jar>
 * dev.relay.bench.TracingBench [jobs] [pairs]}; the database is an embedded PostgreSQL unless
 * {@code RELAY_BENCH_JDBC} names one.
 */
public final class TracingBench {
  private TracingBench() {}

  /** Runs the comparison and prints each pair and the median ratio. */
  public static void main(String[] args) throws Exception {
    int jobs = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
    int pairs = args.length > 1 ? Integer.parseInt(args[1]) : 6;
    SdkTracerProvider provider =
        SdkTracerProvider.builder()
            .addSpanProcessor(BatchSpanProcessor.builder(new Dropping()).build())
            .build();
    OpenTelemetrySdk sdk =
        OpenTelemetrySdk.builder()
            .setTracerProvider(provider)
            .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
            .build();
    RelayOpenTelemetry traced = RelayOpenTelemetry.create(sdk);
    Tracer producer = sdk.getTracer("bench");
    List<Double> ratios = new ArrayList<>();
    String url = System.getenv("RELAY_BENCH_JDBC");
    try (BenchDb db = BenchDb.open(url == null || url.isBlank() ? null : url)) {
      int round = 0;
      for (int warm = 0; warm < 2; warm++) { // not counted: the JIT and the pool warm up
        run(db, RelayTracing.NONE, producer, jobs, round++);
        run(db, traced, producer, jobs, round++);
      }
      for (int pair = 0; pair < pairs; pair++) {
        boolean tracedFirst = pair % 2 == 1; // ABBA
        double first = run(db, tracedFirst ? traced : RelayTracing.NONE, producer, jobs, round++);
        double second = run(db, tracedFirst ? RelayTracing.NONE : traced, producer, jobs, round++);
        double off = tracedFirst ? second : first;
        double on = tracedFirst ? first : second;
        ratios.add(on / off);
        System.out.printf(
            "pair %d: untraced %.0f jobs/s, traced %.0f jobs/s, traced/untraced %.3f%n",
            pair + 1, off, on, on / off);
      }
    } finally {
      provider.close();
    }
    List<Double> sorted = new ArrayList<>(ratios);
    sorted.sort(Double::compare);
    double median =
        sorted.size() % 2 == 1
            ? sorted.get(sorted.size() / 2)
            : (sorted.get(sorted.size() / 2 - 1) + sorted.get(sorted.size() / 2)) / 2;
    System.out.printf("median traced/untraced over %d pairs: %.3f%n", pairs, median);
  }

  /** One burn-down of {@code jobs} items on a fresh schema; jobs per second. */
  private static double run(BenchDb db, RelayTracing tracing, Tracer producer, int jobs, int round)
      throws Exception {
    String schema = "relay_tracing_" + round;
    Migrator.migrate(db.pool(), schema);
    Outbox outbox = Outbox.builder().schema(schema).notifications(false).tracing(tracing).build();
    Span request = producer.spanBuilder("request").startSpan();
    Scope current = request.makeCurrent();
    try (Connection c = db.pool().getConnection()) {
      c.setAutoCommit(false);
      for (int from = 0; from < jobs; from += 1000) {
        List<Work> batch = new ArrayList<>();
        for (int i = from; i < Math.min(jobs, from + 1000); i++) {
          batch.add(Work.of("job-" + i, "bench", "{\"n\": " + i + "}"));
        }
        outbox.enqueueAll(c, batch);
      }
      c.commit();
    } finally {
      current.close();
      request.end();
    }
    CountDownLatch done = new CountDownLatch(jobs);
    Relay relay =
        Relay.builder(db.pool())
            .schema(schema)
            .pollInterval(Duration.ofMillis(50))
            .tracing(tracing)
            .listener(
                new RelayEventListener() {
                  @Override
                  public void completed(Claim claim) {
                    done.countDown();
                  }
                })
            .handle("bench", claim -> Outcome.done())
            .build();
    long t0 = System.nanoTime();
    relay.start();
    try {
      if (!done.await(10, TimeUnit.MINUTES)) {
        throw new IllegalStateException("burn-down did not finish: " + done.getCount() + " left");
      }
      return jobs / ((System.nanoTime() - t0) / 1e9);
    } finally {
      relay.close();
      db.exec("DROP SCHEMA " + schema + " CASCADE");
    }
  }

  /** Accepts every span and keeps none: the cost measured is Relay's and the SDK's, not export. */
  private static final class Dropping implements SpanExporter {
    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }
}
