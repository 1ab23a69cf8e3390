package dev.relay.admin;

import java.time.Duration;
import java.util.Locale;

/**
 * Durations as Relay's operator tools write them, so that {@code relay status} and the console read
 * the same: an age ({@code 42 s}, {@code 3 min 5 s}, {@code 2 h 4 min}, {@code 1 d 3 h}) and a
 * latency, which is finer below a minute ({@code < 1 ms}, {@code 49 ms}, {@code 1.2 s}).
 */
public final class DurationText {
  private DurationText() {}

  /**
   * {@code d} to the second, in its two largest units: {@code 0 s}, {@code 42 s}, {@code 3 min 5
   * s}, {@code 2 h 4 min}, {@code 1 d 3 h}.
   *
   * @param d a duration, not negative
   */
  public static String age(Duration d) {
    long s = d.getSeconds();
    if (s < 60) {
      return s + " s";
    }
    if (s < 3600) {
      return (s / 60) + " min " + (s % 60) + " s";
    }
    if (s < 86_400) {
      return (s / 3600) + " h " + (s % 3600 / 60) + " min";
    }
    return (s / 86_400) + " d " + (s % 86_400 / 3600) + " h";
  }

  /**
   * {@code d} as a latency: {@code < 1 ms}, milliseconds below a second ({@code 49 ms}), seconds to
   * a tenth below a minute ({@code 1.2 s}), then as {@link #age}.
   *
   * @param d a duration, not negative
   */
  public static String latency(Duration d) {
    long ms = d.toMillis();
    if (ms < 1) {
      return "< 1 ms";
    }
    if (ms < 1_000) {
      return ms + " ms";
    }
    if (ms < 60_000) {
      return String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
    }
    return age(d);
  }
}
