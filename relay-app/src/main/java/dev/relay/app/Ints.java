package dev.relay.app;

import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The picocli converter of every {@code int} option: as picocli's own ({@code 'many' is not an
 * int}), except that a whole number too large for an int is {@link OutOfRange}, which {@link
 * RelayCommand} reports in the option's documented range ({@code --max-attempts must be between 1
 * and 10000, was 99999999999}), as a value inside an int but outside the range is reported.
 */
final class Ints implements ITypeConverter<Integer> {
  private static final Pattern WHOLE = Pattern.compile("[+-]?[0-9]+");

  /** A whole number beyond an int; {@link #value()} as typed. */
  static final class OutOfRange extends TypeConversionException {
    private static final long serialVersionUID = 1L;
    private final String value;

    OutOfRange(String value) {
      super(
          "'"
              + value
              + "' is out of range: an integer from "
              + Integer.MIN_VALUE
              + " to "
              + Integer.MAX_VALUE);
      this.value = value;
    }

    String value() {
      return value;
    }
  }

  @Override
  public Integer convert(String value) {
    try {
      return Integer.valueOf(value);
    } catch (NumberFormatException e) {
      if (WHOLE.matcher(value).matches()) {
        throw new OutOfRange(value);
      }
      throw new TypeConversionException("'" + value + "' is not an int");
    }
  }
}
