package dev.relay.transport.nats;

import dev.relay.RelayException;
import java.time.Duration;

/**
 * Refuses to start: a kind's deduplication horizon is longer than the duplicate window of the
 * stream it publishes to, so a retry inside the horizon could be stored twice. Names both values;
 * nothing was published. Fix one of them: lengthen the stream's {@code duplicate_window}, or
 * shorten the kind's horizon (and with it its retry window).
 */
public final class DedupWindowException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String kind;
  private final String stream;
  private final Duration dedupHorizon;
  private final Duration duplicateWindow;

  /**
   * Creates the exception.
   *
   * @param kind the kind
   * @param stream the stream
   * @param dedupHorizon the kind's horizon
   * @param duplicateWindow the stream's duplicate window, as the server reported it
   */
  public DedupWindowException(
      String kind, String stream, Duration dedupHorizon, Duration duplicateWindow) {
    super(
        "kind "
            + kind
            + ": dedupHorizon "
            + dedupHorizon
            + " exceeds the duplicate_window "
            + duplicateWindow
            + " of stream "
            + stream
            + "; a repeat after the window would be stored again. Lengthen the stream's"
            + " duplicate window or shorten the kind's horizon and retry window");
    this.kind = kind;
    this.stream = stream;
    this.dedupHorizon = dedupHorizon;
    this.duplicateWindow = duplicateWindow;
  }

  /** The kind. */
  public String kind() {
    return kind;
  }

  /** The stream. */
  public String stream() {
    return stream;
  }

  /** The kind's deduplication horizon. */
  public Duration dedupHorizon() {
    return dedupHorizon;
  }

  /** The stream's duplicate window. */
  public Duration duplicateWindow() {
    return duplicateWindow;
  }
}
