package dev.relay.internal.json;

import dev.relay.InvalidConfigurationException;

/**
 * A validating scanner for JSON text (RFC 8259), so that a payload PostgreSQL would refuse is
 * refused before anything is sent and the caller's transaction is never aborted by it. It checks
 * what {@code jsonb} checks beyond the grammar: no {@code \u0000} in strings, no unpaired UTF-16
 * surrogates (escaped or raw), and numbers within the range of {@code numeric}. It builds nothing
 * and allocates nothing beyond its own state: it only answers "valid or why not".
 */
public final class JsonText {
  /**
   * The most levels of arrays and objects a value may nest (a top-level array or object is level
   * 1). Deeper JSON is refused as "too deeply nested" although it is valid JSON: jsonb itself stops
   * far later, but payloads that deep are a bug, and the limit bounds this scanner's stack.
   */
  public static final int MAX_DEPTH = 512;

  /** The largest payload limit any Relay component accepts: 64 MiB. */
  public static final int MAX_LIMIT_BYTES = 64 << 20;

  // numeric's documented limits: 131072 digits before the decimal point, 16383 after.
  private static final long MAX_INTEGER_DIGITS = 131_072;
  private static final long MAX_FRACTION_DIGITS = 16_383;
  // numeric_in refuses an exponent from INT32_MAX / 2 on, even on zero (found by fuzzing against
  // jsonb: 0e1073741822 is 0, 0e1073741823 "overflows numeric format").
  private static final long MAX_ZERO_EXPONENT = Integer.MAX_VALUE / 2 - 1;

  private final String s;
  private int pos;

  private JsonText(String s) {
    this.s = s;
  }

  /**
   * Validates a configured payload limit (the {@code maxPayloadBytes} setting of the outbox, the
   * inbox and the HTTP receiver): 1 byte to {@link #MAX_LIMIT_BYTES}.
   */
  public static int checkLimitSetting(int maxPayloadBytes) {
    if (maxPayloadBytes < 1 || maxPayloadBytes > MAX_LIMIT_BYTES) {
      throw new InvalidConfigurationException(
          "maxPayloadBytes",
          "must be between 1 and " + MAX_LIMIT_BYTES + ", was " + maxPayloadBytes);
    }
    return maxPayloadBytes;
  }

  /**
   * Checks {@code text}: returns {@code null} when it is one valid JSON value whose UTF-8 form has
   * at most {@code maxBytes} bytes, otherwise a message that says what is wrong and where.
   */
  public static String problem(String text, int maxBytes) {
    if (text == null) {
      return "is missing";
    }
    long bytes = utf8Length(text);
    if (bytes > maxBytes) {
      return "has " + bytes + " bytes in UTF-8; the limit is " + maxBytes;
    }
    try {
      JsonText scanner = new JsonText(text);
      scanner.skipWhitespace();
      scanner.value(0);
      scanner.skipWhitespace();
      if (scanner.pos != text.length()) {
        throw scanner.error("unexpected text after the JSON value");
      }
      return null;
    } catch (Invalid e) {
      return e.getMessage();
    }
  }

  /** UTF-8 length of {@code text}; an unpaired surrogate counts as 3 bytes (refused later). */
  static long utf8Length(String text) {
    long n = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** A value inside {@code depth} enclosing arrays and objects. */
  private void value(int depth) {
    if (pos >= s.length()) {
      throw error("ends where a value was expected");
    }
    char c = s.charAt(pos);
    if ((c == '{' || c == '[') && depth >= MAX_DEPTH) {
      // Valid JSON may nest deeper; say what the limit is instead of calling it invalid.
      throw new Invalid(
          "is too deeply nested: more than "
              + MAX_DEPTH
              + " levels of arrays and objects (Relay's limit) at character "
              + pos);
    }
    switch (c) {
      case '{' -> object(depth);
      case '[' -> array(depth);
      case '"' -> string();
      case 't' -> literal("true");
      case 'f' -> literal("false");
      case 'n' -> literal("null");
      default -> {
        if (c == '-' || (c >= '0' && c <= '9')) {
          number();
        } else {
          throw error("unexpected character '" + printable(c) + "'");
        }
      }
    }
  }

  private void object(int depth) {
    pos++; // '{'
    skipWhitespace();
    if (peek() == '}') {
      pos++;
      return;
    }
    while (true) {
      skipWhitespace();
      if (peek() != '"') {
        throw error("expected a string as object key");
      }
      string();
      skipWhitespace();
      expect(':');
      skipWhitespace();
      value(depth + 1);
      skipWhitespace();
      char c = peek();
      if (c == ',') {
        pos++;
      } else if (c == '}') {
        pos++;
        return;
      } else {
        throw error("expected ',' or '}' in object");
      }
    }
  }

  private void array(int depth) {
    pos++; // '['
    skipWhitespace();
    if (peek() == ']') {
      pos++;
      return;
    }
    while (true) {
      skipWhitespace();
      value(depth + 1);
      skipWhitespace();
      char c = peek();
      if (c == ',') {
        pos++;
      } else if (c == ']') {
        pos++;
        return;
      } else {
        throw error("expected ',' or ']' in array");
      }
    }
  }

  private void string() {
    pos++; // opening quote
    while (true) {
      if (pos >= s.length()) {
        throw error("ends inside a string");
      }
      char c = s.charAt(pos);
      if (c == '"') {
        pos++;
        return;
      }
      if (c < 0x20) {
        throw error("has an unescaped control character in a string");
      }
      if (c == '\\') {
        pos++;
        escape();
        continue;
      }
      if (Character.isHighSurrogate(c)) {
        if (pos + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(pos + 1))) {
          throw error("has an unpaired UTF-16 surrogate");
        }
        pos += 2;
        continue;
      }
      if (Character.isLowSurrogate(c)) {
        throw error("has an unpaired UTF-16 surrogate");
      }
      pos++;
    }
  }

  private void escape() {
    if (pos >= s.length()) {
      throw error("ends inside an escape");
    }
    char c = s.charAt(pos++);
    switch (c) {
      case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> {}
      case 'u' -> {
        int code = hex4();
        if (code == 0) {
          throw error("has \\u0000, which PostgreSQL jsonb cannot store");
        }
        if (Character.isHighSurrogate((char) code)) {
          if (pos + 6 > s.length() || s.charAt(pos) != '\\' || s.charAt(pos + 1) != 'u') {
            throw error("has an unpaired \\u surrogate escape");
          }
          pos += 2;
          if (!Character.isLowSurrogate((char) hex4())) {
            throw error("has an unpaired \\u surrogate escape");
          }
        } else if (Character.isLowSurrogate((char) code)) {
          throw error("has an unpaired \\u surrogate escape");
        }
      }
      default -> throw error("has an invalid escape '\\" + printable(c) + "'");
    }
  }

  private int hex4() {
    if (pos + 4 > s.length()) {
      throw error("ends inside a \\u escape");
    }
    int v = 0;
    for (int i = 0; i < 4; i++) {
      int d = Character.digit(s.charAt(pos++), 16);
      if (d < 0) {
        throw error("has a \\u escape that is not four hex digits");
      }
      v = v * 16 + d;
    }
    return v;
  }

  private void number() {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    int intStart = pos;
    if (peek() == '0') {
      pos++;
    } else if (isDigit(peek())) {
      while (isDigit(peek())) {
        pos++;
      }
    } else {
      throw error("has a number without digits");
    }
    long intDigits = significantIntegerDigits(intStart, pos);
    long fracDigits = 0;
    boolean fractionIsZero = true;
    if (peek() == '.') {
      pos++;
      if (!isDigit(peek())) {
        throw error("has a number with no digits after '.'");
      }
      int fracStart = pos;
      while (isDigit(peek())) {
        fractionIsZero &= s.charAt(pos) == '0';
        pos++;
      }
      fracDigits = pos - fracStart;
    }
    long exponent = 0;
    char e = peek();
    if (e == 'e' || e == 'E') {
      pos++;
      boolean negative = false;
      if (peek() == '+' || peek() == '-') {
        negative = peek() == '-';
        pos++;
      }
      if (!isDigit(peek())) {
        throw error("has a number with an empty exponent");
      }
      while (isDigit(peek())) {
        // Saturate: anything this large is out of range anyway.
        exponent = Math.min(exponent * 10 + (s.charAt(pos) - '0'), MAX_ZERO_EXPONENT + 1);
        pos++;
      }
      if (negative) {
        exponent = -exponent;
      }
    }
    // Zero is zero at any exponent below numeric's parsing bound; its scale still counts.
    boolean zero = s.charAt(intStart) == '0' && fractionIsZero;
    boolean outOfRange =
        zero
            ? exponent > MAX_ZERO_EXPONENT || fracDigits - exponent > MAX_FRACTION_DIGITS
            : intDigits + exponent > MAX_INTEGER_DIGITS
                || fracDigits - exponent > MAX_FRACTION_DIGITS;
    if (outOfRange) {
      pos = start;
      throw error("has a number outside the range PostgreSQL numeric can store");
    }
  }

  private long significantIntegerDigits(int from, int to) {
    int i = from;
    while (i < to - 1 && s.charAt(i) == '0') {
      i++;
    }
    return to - i;
  }

  private void literal(String word) {
    if (!s.startsWith(word, pos)) {
      throw error("has an invalid literal (expected " + word + ")");
    }
    pos += word.length();
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("expected '" + c + "'");
    }
    pos++;
  }

  private char peek() {
    return pos < s.length() ? s.charAt(pos) : '\uFFFF';
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private void skipWhitespace() {
    while (pos < s.length()) {
      char c = s.charAt(pos);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        pos++;
      } else {
        return;
      }
    }
  }

  private static String printable(char c) {
    return c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c);
  }

  private Invalid error(String what) {
    return new Invalid("is not valid JSON: " + what + " at character " + pos);
  }

  /** Internal control flow for the first problem found; never escapes {@link #problem}. */
  private static final class Invalid extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Invalid(String message) {
      super(message, null, false, false);
    }
  }
}
