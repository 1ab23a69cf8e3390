package dev.relay.opentelemetry;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.RelayMdc;
import dev.relay.RelayTracing;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.MDC;

/**
 * OpenTelemetry tracing for Relay, on the OpenTelemetry API alone (the application brings the SDK
 * or the agent). Give one instance to the producer's outbox and to the runtime:
 *
 * <pre>{@code
 * RelayOpenTelemetry tracing = RelayOpenTelemetry.create(openTelemetry);
 * Outbox outbox = Outbox.builder().tracing(tracing).build();
 * Relay relay = Relay.builder(dataSource).tracing(tracing).handle("mail", mailer).build();
 * }</pre>
 *
 * <p>What it records:
 *
 * <ul>
 *   <li><b>At enqueue</b>, the context current on the producer's thread, as the propagators of
 *       {@code openTelemetry} write it ({@code traceparent}, {@code tracestate}, and {@code
 *       baggage} when a baggage propagator is configured), is stored with the work. No span is
 *       started: the producer's own span (the request that enqueued) is the one the work refers to.
 *   <li><b>Each attempt</b> runs in a {@link SpanKind#CONSUMER} span named {@code process <queue>},
 *       made current around the handler, so the handler's own calls (and Relay's transports,
 *       through {@link Claim#callTraceContext()}) carry it. Its <b>parent</b> is the producer's
 *       span, and it also has a <b>link</b> to it: the parent makes the producer's request, every
 *       attempt (first try, retries, the takeover after an expired lease) and the receiver's work
 *       one trace, which is what a reader of one order's history wants; the link is what the
 *       OpenTelemetry messaging conventions ask of a consumer span, so tools that group by links
 *       (and batch views) still find the producer. Work enqueued without a current span gets a new
 *       root. Attributes: {@code messaging.system} ({@code relay}), {@code
 *       messaging.operation.name} and {@code .type} ({@code process}), {@code
 *       messaging.destination.name} (the queue), {@code messaging.message.id} (the work ID), {@code
 *       relay.kind}, {@code relay.generation}, {@code relay.attempt}, {@code relay.reclaimed} (a
 *       takeover of an expired lease), and at the end {@code relay.outcome} ({@code done}, {@code
 *       retry}, {@code failed}, {@code cancelled}) or {@code relay.ending} ({@code stale}, {@code
 *       lease_expired}, {@code abandoned}).
 *   <li><b>Events</b> on the attempt's span: {@code relay.retry} (with the delay and error kind),
 *       {@code relay.renew_refused}, {@code relay.stale_write} (the outcome write a newer claim
 *       refused), {@code relay.timed_out}, {@code relay.cancel_requested}, {@code relay.abandoned};
 *       an exception the handler threw is recorded on it.
 *   <li><b>Work ended by the claim</b> without running ({@code horizon_passed}, {@code deadline},
 *       {@code attempts_exhausted}): a short {@code retire <queue>} span with {@code relay.ending}
 *       set to the reason.
 *   <li><b>Receivers</b> ({@code HttpReceiver}, {@code BrokerInbox} built with this hook): a span
 *       ({@link SpanKind#SERVER} for HTTP, {@link SpanKind#CONSUMER} for a broker) whose parent is
 *       the sender's {@code traceparent}, current while the delivery is applied.
 * </ul>
 *
 * <p>While an attempt's handler runs, {@link RelayMdc#TRACE_ID} holds the attempt span's trace ID.
 * A handler that never returns leaves its span open (it is ended when its outcome is recorded or
 * refused). Thread-safe.
 */
public final class RelayOpenTelemetry implements RelayTracing {
  /** The instrumentation scope name spans are recorded under. */
  public static final String INSTRUMENTATION_NAME = "dev.relay";

  static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> OPERATION_NAME =
      AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> OPERATION_TYPE =
      AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> KIND = AttributeKey.stringKey("relay.kind");
  static final AttributeKey<Long> GENERATION = AttributeKey.longKey("relay.generation");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("relay.attempt");
  static final AttributeKey<Boolean> RECLAIMED = AttributeKey.booleanKey("relay.reclaimed");
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("relay.outcome");
  static final AttributeKey<String> ENDING = AttributeKey.stringKey("relay.ending");
  static final AttributeKey<String> OPERATION = AttributeKey.stringKey("relay.operation");
  static final AttributeKey<Long> DELAY_MS = AttributeKey.longKey("relay.retry.delay_ms");
  static final AttributeKey<String> ERROR_KIND = AttributeKey.stringKey("relay.error_kind");
  static final AttributeKey<String> RECEIVER = AttributeKey.stringKey("relay.receiver");

  private static final TextMapGetter<Map<String, String>> GETTER =
      new TextMapGetter<>() {
        // keys() is deprecated in 1.68 yet still abstract: every getter must implement it
        @SuppressWarnings("deprecation")
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private final Tracer tracer;
  private final TextMapPropagator propagator;
  private final Map<String, Span> attempts = new ConcurrentHashMap<>();

  private RelayOpenTelemetry(OpenTelemetry openTelemetry) {
    this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
    this.propagator = openTelemetry.getPropagators().getTextMapPropagator();
  }

  /** Tracing with {@code openTelemetry}'s tracer and text-map propagators. */
  public static RelayOpenTelemetry create(OpenTelemetry openTelemetry) {
    return new RelayOpenTelemetry(Objects.requireNonNull(openTelemetry, "openTelemetry"));
  }

  @Override
  public Map<String, String> currentContext() {
    Map<String, String> carrier = new LinkedHashMap<>();
    propagator.inject(Context.current(), carrier, Map::put);
    return carrier;
  }

  @Override
  public RelayTracing.Scope enterAttempt(Claim claim) {
    Context producer = propagator.extract(Context.root(), claim.traceContext(), GETTER);
    SpanContext parent = Span.fromContext(producer).getSpanContext();
    SpanBuilder b =
        tracer
            .spanBuilder("process " + claim.queue())
            .setSpanKind(SpanKind.CONSUMER)
            .setParent(producer)
            .setAttribute(MESSAGING_SYSTEM, "relay")
            .setAttribute(OPERATION_NAME, "process")
            .setAttribute(OPERATION_TYPE, "process")
            .setAttribute(DESTINATION, claim.queue())
            .setAttribute(MESSAGE_ID, claim.workId())
            .setAttribute(KIND, claim.kind())
            .setAttribute(GENERATION, claim.generation())
            .setAttribute(ATTEMPT, (long) claim.attempt())
            .setAttribute(RECLAIMED, claim.reclaimed());
    if (parent.isValid()) {
      b.addLink(parent);
    }
    Span span = b.startSpan();
    attempts.put(key(claim), span);
    io.opentelemetry.context.Scope scope = producer.with(span).makeCurrent();
    MDC.put(RelayMdc.TRACE_ID, span.getSpanContext().getTraceId());
    return scope::close;
  }

  @Override
  public RelayTracing.Scope enterDelivery(
      Map<String, String> carrier, String workId, String receiver) {
    Context sender = propagator.extract(Context.root(), carrier, GETTER);
    boolean http = "http".equals(receiver);
    Span span =
        tracer
            .spanBuilder((http ? "receive " : "process ") + receiver)
            .setSpanKind(http ? SpanKind.SERVER : SpanKind.CONSUMER)
            .setParent(sender)
            .setAttribute(MESSAGING_SYSTEM, "relay")
            .setAttribute(OPERATION_NAME, "process")
            .setAttribute(OPERATION_TYPE, "process")
            .setAttribute(MESSAGE_ID, workId)
            .setAttribute(RECEIVER, receiver)
            .startSpan();
    io.opentelemetry.context.Scope scope = sender.with(span).makeCurrent();
    return () -> {
      scope.close();
      span.end();
    };
  }

  @Override
  public void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {
    Span span = attempts.get(key(claim));
    if (span != null && error != null) {
      span.recordException(error);
    }
  }

  @Override
  public void completed(Claim claim) {
    end(claim, OUTCOME, "done", StatusCode.UNSET);
  }

  @Override
  public void retried(Claim claim, Duration delay, String errorKind, String error) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.addEvent(
          "relay.retry",
          Attributes.of(
              DELAY_MS, delay.toMillis(), ERROR_KIND, errorKind == null ? "" : errorKind));
    }
    end(claim, OUTCOME, "retry", StatusCode.UNSET);
  }

  @Override
  public void failed(Claim claim, String errorKind, String error) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.setStatus(StatusCode.ERROR, error == null ? "" : error);
    }
    end(claim, OUTCOME, "failed", StatusCode.ERROR);
  }

  @Override
  public void cancelled(Claim claim, String reason) {
    end(claim, OUTCOME, "cancelled", StatusCode.UNSET);
  }

  @Override
  public void stale(Claim claim, String operation) {
    Span span = attempts.get(key(claim));
    if (span == null) {
      return;
    }
    if ("renew".equals(operation)) {
      // the handler still runs; its outcome write will be refused and end the span
      span.addEvent("relay.renew_refused");
      return;
    }
    span.addEvent("relay.stale_write", Attributes.of(OPERATION, operation));
    end(claim, ENDING, claim.isLeaseLost() ? "lease_expired" : "stale", StatusCode.UNSET);
  }

  @Override
  public void abandoned(Claim claim, String operation) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.addEvent("relay.abandoned", Attributes.of(OPERATION, operation));
    }
    end(claim, ENDING, "abandoned", StatusCode.UNSET);
  }

  @Override
  public void timedOut(Claim claim) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.addEvent("relay.timed_out");
    }
  }

  @Override
  public void cancelRequested(Claim claim) {
    Span span = attempts.get(key(claim));
    if (span != null) {
      span.addEvent("relay.cancel_requested");
    }
  }

  @Override
  public void retired(String workId, String kind, String queue, String state, String reason) {
    tracer
        .spanBuilder("retire " + queue)
        .setSpanKind(SpanKind.INTERNAL)
        .setNoParent()
        .setAttribute(MESSAGING_SYSTEM, "relay")
        .setAttribute(DESTINATION, queue)
        .setAttribute(MESSAGE_ID, workId)
        .setAttribute(KIND, kind)
        .setAttribute(OUTCOME, state)
        .setAttribute(ENDING, reason)
        .startSpan()
        .end();
  }

  private void end(Claim claim, AttributeKey<String> key, String value, StatusCode status) {
    Span span = attempts.remove(key(claim));
    if (span == null) {
      return;
    }
    span.setAttribute(key, value);
    if (status == StatusCode.ERROR) {
      span.setStatus(StatusCode.ERROR);
    }
    span.end();
  }

  private static String key(Claim claim) {
    return claim.workId() + '\u0000' + claim.generation();
  }
}
