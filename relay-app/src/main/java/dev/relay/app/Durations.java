package dev.relay.app;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses durations as people type them: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code
 * 7d}, or ISO-8601 ({@code PT30S}). Also a picocli converter, so a bad value is a usage error.
 */
final class Durations implements ITypeConverter<Duration> {
  /**
   * What a duration too long for a {@link Duration} (or its number for a long) reads as: the
   * longest one, which the range of every option and file field refuses, with the value as typed
   * ({@code --delay must be between zero and 100 years, was 99999999999999999999d}).
   */
  static final Duration LONGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

  private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

  @Override
  public Duration convert(String value) {
    try {
      return parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }

  /**
   * Parses {@code text}; one too long for a {@link Duration} is {@link #LONGEST}.
   *
   * @throws IllegalArgumentException naming the accepted forms
   */
  static Duration parse(String text) {
    String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
    Matcher m = SIMPLE.matcher(t);
    if (m.matches()) {
      try {
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        };
      } catch (NumberFormatException | ArithmeticException e) {
        return LONGEST; // digits only: too many for a long, or days too many for a Duration
      }
    }
    try {
      Duration d = Duration.parse(t.toUpperCase(Locale.ROOT));
      if (!d.isNegative()) {
        return d;
      }
    } catch (DateTimeParseException e) {
      if ((e.getCause() instanceof ArithmeticException
              || e.getCause() instanceof NumberFormatException)
          && t.indexOf('-') < 0) {
        return LONGEST; // PT99999999999999999999H; a negative one is no duration, as below
      }
    }
    throw new IllegalArgumentException(
        "'" + text + "' is not a duration: use 500ms, 30s, 5m, 2h, 7d or ISO-8601 like PT30S");
  }

  /**
   * {@code d} exactly, in the units the options take: {@code 0s}, {@code 500ms}, {@code 90m} as
   * {@code 1h30m}, {@code 36501d}; for echoing a value the user typed.
   */
  static String format(Duration d) {
    if (d.isNegative()) {
      return "-" + format(d.negated());
    }
    StringBuilder sb = new StringBuilder();
    long days = d.toDays();
    if (days > 0) {
      sb.append(days).append('d');
    }
    if (d.toHoursPart() > 0) {
      sb.append(d.toHoursPart()).append('h');
    }
    if (d.toMinutesPart() > 0) {
      sb.append(d.toMinutesPart()).append('m');
    }
    if (d.toSecondsPart() > 0) {
      sb.append(d.toSecondsPart()).append('s');
    }
    if (d.toMillisPart() > 0) {
      sb.append(d.toMillisPart()).append("ms");
    }
    return sb.length() == 0 ? "0s" : sb.toString();
  }

  /**
   * A short form of {@code d} for tables: {@code 42s}, {@code 3m12s}, {@code 5h0m}, {@code 2d3h}.
   */
  static String brief(Duration d) {
    long s = d.getSeconds();
    if (s < 60) {
      return s + "s";
    }
    if (s < 3600) {
      return (s / 60) + "m" + (s % 60) + "s";
    }
    if (s < 86400) {
      return (s / 3600) + "h" + (s % 3600 / 60) + "m";
    }
    return (s / 86400) + "d" + (s % 86400 / 3600) + "h";
  }
}
