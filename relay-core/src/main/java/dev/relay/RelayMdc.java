package dev.relay;

/**
 * The keys Relay puts in the SLF4J {@link org.slf4j.MDC} while a handler runs (on the handler
 * thread, from just before the handler starts until its outcome is decided) and while an outcome is
 * recorded (on the thread that reports it to the {@link RelayEventListener}), so that log lines of
 * an attempt, the handler's own included, name the work they belong to. A logging pattern reads
 * them as {@code %X{relay.work_id}}. The keys are removed again afterwards; a handler thread keeps
 * none between attempts.
 */
public final class RelayMdc {
  /** The work ID. */
  public static final String WORK_ID = "relay.work_id";

  /** The kind. */
  public static final String KIND = "relay.kind";

  /** The claim generation of the attempt, as a decimal number. */
  public static final String GENERATION = "relay.generation";

  /**
   * The trace ID (32 lower-case hex digits) of the trace context stored with the work at enqueue
   * ({@link Claim#traceContext()}), which is also the attempt span's trace when the tracing hook
   * continues it (as {@code relay-opentelemetry} does); absent when the work carries none (a
   * tracing hook may then put the new trace's ID while the handler runs).
   */
  public static final String TRACE_ID = "relay.trace_id";

  private RelayMdc() {}
}
