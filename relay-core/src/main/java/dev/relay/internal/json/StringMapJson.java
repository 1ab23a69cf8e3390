package dev.relay.internal.json;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A flat JSON object of string fields, as stored in {@code outbox.trace_context}: written as JSON
 * text for a {@code ::jsonb} cast, read back from PostgreSQL's rendering of it. Not a JSON parser
 * for anything else: a value that is not a string, or nesting, is refused.
 */
public final class StringMapJson {
  private StringMapJson() {}

  /** {@code fields} as a JSON object, or {@code null} when it is null or empty. */
  public static String write(Map<String, String> fields) {
    if (fields == null || fields.isEmpty()) {
      return null;
    }
    StringBuilder b = new StringBuilder(64 * fields.size());
    b.append('{');
    boolean first = true;
    for (Map.Entry<String, String> e : fields.entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      quote(b, e.getKey());
      b.append(':');
      quote(b, e.getValue());
    }
    return b.append('}').toString();
  }

  /**
   * The fields of {@code json}, a flat object of strings (as {@link #write} makes it, or as
   * PostgreSQL renders it), in order; empty for {@code null}.
   *
   * @throws IllegalArgumentException if {@code json} is not such an object
   */
  public static Map<String, String> read(String json) {
    if (json == null) {
      return Map.of();
    }
    Reader r = new Reader(json);
    Map<String, String> fields = new LinkedHashMap<>();
    r.expect('{');
    if (!r.consume('}')) {
      do {
        String key = r.string();
        r.expect(':');
        fields.put(key, r.string());
      } while (r.consume(','));
      r.expect('}');
    }
    r.end();
    return Collections.unmodifiableMap(fields);
  }

  /**
   * The stored trace context of a claim: {@link #read}, or empty when the stored text is not a flat
   * object of strings (written by something other than Relay): no context rather than no attempt.
   */
  public static Map<String, String> readStored(String json) {
    try {
      return read(json);
    } catch (IllegalArgumentException e) {
      return Map.of();
    }
  }

  private static void quote(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    b.append('"');
  }

  private static final class Reader {
    private final String s;
    private int i;

    Reader(String s) {
      this.s = s;
    }

    private void skipSpace() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    boolean consume(char c) {
      skipSpace();
      if (i < s.length() && s.charAt(i) == c) {
        i++;
        return true;
      }
      return false;
    }

    void expect(char c) {
      if (!consume(c)) {
        throw new IllegalArgumentException("expected '" + c + "' at offset " + i + " of " + s);
      }
    }

    void end() {
      skipSpace();
      if (i != s.length()) {
        throw new IllegalArgumentException("unexpected text at offset " + i + " of " + s);
      }
    }

    String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') {
          return b.toString();
        }
        if (c != '\\') {
          b.append(c);
          continue;
        }
        if (i >= s.length()) {
          break;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'b' -> b.append('\b');
          case 'f' -> b.append('\f');
          case 'n' -> b.append('\n');
          case 'r' -> b.append('\r');
          case 't' -> b.append('\t');
          case 'u' -> {
            if (i + 4 > s.length()) {
              throw new IllegalArgumentException("truncated escape in " + s);
            }
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> b.append(e); // " \ /
        }
      }
      throw new IllegalArgumentException("unterminated string in " + s);
    }
  }
}
