package dev.relay.internal.runtime;

import dev.relay.Claim;
import dev.relay.RelayMdc;
import org.slf4j.MDC;

/** Puts an attempt's {@link RelayMdc} keys on the current thread, and clears them. */
final class AttemptMdc {
  private static final int TRACE_ID_START = 3; // "00-" of a version 00 traceparent
  private static final int TRACE_ID_END = TRACE_ID_START + 32;

  private AttemptMdc() {}

  /** Puts the keys of {@code c} on this thread; {@link #clear()} them on this thread. */
  static void put(Claim c) {
    MDC.put(RelayMdc.WORK_ID, c.workId());
    MDC.put(RelayMdc.KIND, c.kind());
    MDC.put(RelayMdc.GENERATION, Long.toString(c.generation()));
    String traceId = traceId(c.traceContext().get("traceparent"));
    if (traceId != null) {
      MDC.put(RelayMdc.TRACE_ID, traceId);
    }
  }

  /** The trace ID of a W3C {@code traceparent}, or {@code null} when it is absent or malformed. */
  static String traceId(String traceparent) {
    if (traceparent == null
        || traceparent.length() < TRACE_ID_END + 1
        || traceparent.charAt(TRACE_ID_START - 1) != '-'
        || traceparent.charAt(TRACE_ID_END) != '-') {
      return null;
    }
    String id = traceparent.substring(TRACE_ID_START, TRACE_ID_END);
    for (int i = 0; i < id.length(); i++) {
      char ch = id.charAt(i);
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
        return null;
      }
    }
    return id;
  }

  /** Removes the keys from this thread. */
  static void clear() {
    MDC.remove(RelayMdc.WORK_ID);
    MDC.remove(RelayMdc.KIND);
    MDC.remove(RelayMdc.GENERATION);
    MDC.remove(RelayMdc.TRACE_ID);
  }
}
