package dev.relay.admin;

import java.time.Duration;
import java.util.Optional;

/**
 * The spans the console's charts show ({@link Admin#charts}), each read from one tier of the rollup
 * that {@link Maintenance} keeps: its points are that tier's buckets.
 */
public enum ChartWindow {
  /** The last hour in 1-minute points (60). */
  HOUR("1h", Duration.ofHours(1), Duration.ofMinutes(1)),
  /** The last 24 hours in 15-minute points (96). */
  DAY("24h", Duration.ofHours(24), Duration.ofMinutes(15)),
  /** The last 7 days in 1-hour points (168). */
  WEEK("7d", Duration.ofDays(7), Duration.ofHours(1));

  private final String label;
  private final Duration span;
  private final Duration step;

  ChartWindow(String label, Duration span, Duration step) {
    this.label = label;
    this.span = span;
    this.step = step;
  }

  /** How the window is named in URLs and on pages: {@code 1h}, {@code 24h}, {@code 7d}. */
  public String label() {
    return label;
  }

  /** How far back the window reaches. */
  public Duration span() {
    return span;
  }

  /** The width of one point (one rollup bucket). */
  public Duration step() {
    return step;
  }

  /** How many points the window has. */
  public int points() {
    return (int) (span.toSeconds() / step.toSeconds());
  }

  /**
   * The window named {@code label} ({@link #label()}), or empty when none is.
   *
   * @param label {@code 1h}, {@code 24h} or {@code 7d}
   * @return the window
   */
  public static Optional<ChartWindow> parse(String label) {
    for (ChartWindow w : values()) {
      if (w.label.equals(label)) {
        return Optional.of(w);
      }
    }
    return Optional.empty();
  }
}
