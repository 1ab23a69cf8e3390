package dev.relay.spring.autoconfigure;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.RelayMdc;
import dev.relay.RelayTracing;
import io.micrometer.tracing.Link;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.MDC;

/**
 * Relay's tracing hook on Micrometer Tracing, so that it follows whichever bridge (OpenTelemetry or
 * Brave) the application configured: the same spans, names, parent, link, attributes and events as
 * {@code relay-opentelemetry}'s (see guide.md, "Tracing"), through the {@link Tracer} and {@link
 * Propagator} of the context.
 */
final class RelayMicrometerTracing implements RelayTracing {
  private static final Propagator.Getter<Map<String, String>> GETTER = Map::get;

  private final Tracer tracer;
  private final Propagator propagator;
  private final Map<String, Span> attempts = new ConcurrentHashMap<>();

  RelayMicrometerTracing(Tracer tracer, Propagator propagator) {
    this.tracer = tracer;
    this.propagator = propagator;
  }

  @Override
  public Map<String, String> currentContext() {
    TraceContext current = tracer.currentTraceContext().context();
    if (current == null) {
      return Map.of();
    }
    Map<String, String> carrier = new LinkedHashMap<>();
    propagator.inject(current, carrier, Map::put);
    return carrier;
  }

  @Override
  public RelayTracing.Scope enterAttempt(Claim claim) {
    Map<String, String> stored = claim.traceContext();
    Span.Builder b =
        stored.containsKey("traceparent")
            ? propagator.extract(stored, GETTER)
            : tracer.spanBuilder().setNoParent();
    TraceContext producer = producer(stored.get("traceparent"));
    if (producer != null) {
      b.addLink(new Link(producer));
    }
    Span span =
        b.name("process " + claim.queue())
            .kind(Span.Kind.CONSUMER)
            .tag("messaging.system", "relay")
            .tag("messaging.operation.name", "process")
            .tag("messaging.operation.type", "process")
            .tag("messaging.destination.name", claim.queue())
            .tag("messaging.message.id", claim.workId())
            .tag("relay.kind", claim.kind())
            .tag("relay.generation", claim.generation())
            .tag("relay.attempt", claim.attempt())
            .tag("relay.reclaimed", Boolean.toString(claim.reclaimed()))
            .start();
    attempts.put(key(claim), span);
    Tracer.SpanInScope scope = tracer.withSpan(span);
    MDC.put(RelayMdc.TRACE_ID, span.context().traceId());
    return scope::close;
  }

  @Override
  public RelayTracing.Scope enterDelivery(
      Map<String, String> carrier, String workId, String receiver) {
    boolean http = "http".equals(receiver);
    Span.Builder b =
        carrier.containsKey("traceparent")
            ? propagator.extract(carrier, GETTER)
            : tracer.spanBuilder().setNoParent();
    Span span =
        b.name((http ? "receive " : "process ") + receiver)
            .kind(http ? Span.Kind.SERVER : Span.Kind.CONSUMER)
            .tag("messaging.system", "relay")
            .tag("messaging.message.id", workId)
            .tag("relay.receiver", receiver)
            .start();
    Tracer.SpanInScope scope = tracer.withSpan(span);
    return () -> {
      scope.close();
      span.end();
    };
  }

  /** The producer's span as a link target, from its W3C traceparent; null when absent. */
  private TraceContext producer(String traceparent) {
    if (traceparent == null) {
      return null;
    }
    String[] parts = traceparent.split("-");
    if (parts.length < 4 || parts[1].length() != 32 || parts[2].length() != 16) {
      return null;
    }
    return tracer
        .traceContextBuilder()
        .traceId(parts[1])
        .spanId(parts[2])
        .sampled(parts[3].endsWith("1"))
        .build();
  }

  @Override
  public void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {
    Span span = attempts.get(key(claim));
    if (span != null && error != null) {
      span.error(error);
    }
  }

  @Override
  public void completed(Claim claim) {
    end(claim, "relay.outcome", "done");
  }

  @Override
  public void retried(Claim claim, Duration delay, String errorKind, String error) {
    event(claim, "relay.retry");
    end(claim, "relay.outcome", "retry");
  }

  @Override
  public void failed(Claim claim, String errorKind, String error) {
    end(claim, "relay.outcome", "failed");
  }

  @Override
  public void cancelled(Claim claim, String reason) {
    end(claim, "relay.outcome", "cancelled");
  }

  @Override
  public void stale(Claim claim, String operation) {
    if ("renew".equals(operation)) {
      event(claim, "relay.renew_refused");
      return;
    }
    event(claim, "relay.stale_write");
    end(claim, "relay.ending", claim.isLeaseLost() ? "lease_expired" : "stale");
  }

  @Override
  public void abandoned(Claim claim, String operation) {
    event(claim, "relay.abandoned");
    end(claim, "relay.ending", "abandoned");
  }

  @Override
  public void timedOut(Claim claim) {
    event(claim, "relay.timed_out");
  }

  @Override
  public void cancelRequested(Claim claim) {
    event(claim, "relay.cancel_requested");
  }

  @Override
  public void retired(String workId, String kind, String queue, String state, String reason) {
    tracer
        .spanBuilder()
        .setNoParent()
        .name("retire " + queue)
        .tag("messaging.system", "relay")
        .tag("messaging.destination.name", queue)
        .tag("messaging.message.id", workId)
        .tag("relay.kind", kind)
        .tag("relay.outcome", state)
        .tag("relay.ending", reason)
        .start()
        .end();
  }

  private void event(Claim claim, String name) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.event(name);
    }
  }

  private void end(Claim claim, String tag, String value) {
    Span span = attempts.remove(key(claim));
    if (span != null) {
      span.tag(tag, value);
      span.end();
    }
  }

  private static String key(Claim claim) {
    return claim.workId() + '\u0000' + claim.generation();
  }
}
