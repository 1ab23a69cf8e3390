package dev.relay.app;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses ISO-8601 instants ({@code 2026-01-31T12:00:00Z}), naming the expected form when a value is
 * not one. Also the picocli converter of every {@link Instant} option, so a bad value is a usage
 * error that says what to type rather than a parser's exception.
 */
final class Instants implements ITypeConverter<Instant> {
  @Override
  public Instant convert(String value) {
    try {
      return parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }

  /**
   * Parses {@code text}.
   *
   * @throws IllegalArgumentException naming the accepted form
   */
  static Instant parse(String text) {
    try {
      return Instant.parse(text.strip());
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          "'" + text + "' is not an ISO-8601 instant like 2026-01-31T12:00:00Z");
    }
  }
}
