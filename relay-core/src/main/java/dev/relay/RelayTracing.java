package dev.relay;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The hook a tracing library plugs into Relay: it hands the producer's trace context to the
 * enqueue, which stores it with the work, and it wraps each attempt's handler, which can then run
 * in a span that continues that context. Relay itself knows no tracing library; {@code
 * relay-opentelemetry} implements this for OpenTelemetry, and the Spring Boot starter for
 * Micrometer Tracing. Every method has a no-op default, and {@link #NONE} (the default of {@link
 * Outbox.Builder#tracing} and {@link Relay.Builder#tracing}) costs nothing: no context is read,
 * nothing is bound, no scope is opened.
 *
 * <p>As a {@link RelayEventListener}, an implementation also receives every event of the runtime it
 * is configured on (besides the runtime's own listener), with the same contract: fast, never
 * blocking, never throwing. That is where it ends an attempt's span (the outcome recorded, a stale
 * write refused, the outcome abandoned) and adds events (retries, refused renewals).
 *
 * <p>The stored context is a small map of W3C Trace Context carrier fields ({@code traceparent},
 * {@code tracestate}, and {@code baggage} when the implementation propagates it), kept in the
 * nullable column {@code outbox.trace_context}. It is not part of the payload and never compared: a
 * repeat of the same intention under another trace is "already enqueued" and keeps the first trace.
 * A work item may carry its own context ({@link Work#traceContext(Map)}, for example one per
 * incoming request of a bulk enqueue); this hook supplies it for items that do not.
 */
public interface RelayTracing extends RelayEventListener {
  /** No tracing: nothing is stored and no attempt is wrapped. */
  RelayTracing NONE = new RelayTracing() {};

  /**
   * The W3C Trace Context fields a call carries as headers and a receiver continues: {@code
   * traceparent} and {@code tracestate}, in that order.
   */
  List<String> HEADERS = List.of("traceparent", "tracestate");

  /**
   * The trace headers among {@code lookup}'s: each of {@link #HEADERS} for which it returns a
   * value, under its lower-case name. A sender passes the attempt's {@link
   * Claim#callTraceContext()} ({@code context::get}) to learn which headers to set; a receiver
   * passes its header lookup to build the carrier for {@link #enterDelivery}.
   *
   * @param lookup the value of a header by its lower-case name, or {@code null} when absent
   * @return a new mutable map in the order of {@link #HEADERS}, empty when none is present
   */
  static Map<String, String> headers(Function<String, String> lookup) {
    Map<String, String> carrier = new LinkedHashMap<>();
    for (String name : HEADERS) {
      String value = lookup.apply(name);
      if (value != null) {
        carrier.put(name, value);
      }
    }
    return carrier;
  }

  /**
   * The carrier fields of the trace context current on the calling (producer's) thread, stored with
   * work enqueued now that names none of its own; empty when no trace is current. Called once per
   * enqueue call, before anything is sent; must be fast and must not throw (an exception refuses
   * the enqueue, which changes nothing).
   */
  default Map<String, String> currentContext() {
    return Map.of();
  }

  /**
   * Called on the handler thread right before the handler of {@code claim} runs (once per claim of
   * a batch, in order); the returned scope is closed on the same thread right after the handler
   * returned or threw, before the outcome is recorded. This is where the attempt's span becomes
   * current, so that the handler's own calls (an HTTP request, a broker publish) carry it. Must not
   * throw (an exception is logged and the handler runs without a scope).
   */
  default Scope enterAttempt(Claim claim) {
    return Scope.NONE;
  }

  /**
   * Called by a receiver ({@code HttpReceiver}, the broker inboxes) on the thread that applies a
   * delivery, with the trace headers the sender put on it ({@code traceparent}, {@code tracestate};
   * empty when there were none): the returned scope, closed on the same thread once the delivery's
   * reply is decided, is where the receiver's span continues the sender's trace. Must not throw.
   *
   * @param carrier the delivery's trace headers (lower-case names)
   * @param workId the delivery's work ID (its message ID)
   * @param receiver what received it: {@code http} or the broker inbox's consumer name
   */
  default Scope enterDelivery(Map<String, String> carrier, String workId, String receiver) {
    return Scope.NONE;
  }

  /** What {@link #enterAttempt} or {@link #enterDelivery} opened; closed once, on its thread. */
  @FunctionalInterface
  interface Scope extends AutoCloseable {
    /** A scope that does nothing. */
    Scope NONE = () -> {};

    /** Leaves the scope; must not throw. */
    @Override
    void close();
  }
}
