package dev.relay.bench;

import java.util.Locale;
import java.util.Map;

/** The little JSON writing the report needs; no reader, no dependency. */
final class Json {
  private Json() {}

  static String string(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  static String number(double d) {
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      return "null";
    }
    if (d == Math.rint(d) && Math.abs(d) < 1e15) {
      return Long.toString((long) d);
    }
    return String.format(Locale.ROOT, "%.6g", d);
  }

  static String value(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Number n) {
      return number(n.doubleValue());
    }
    if (v instanceof Boolean bool) {
      return bool.toString();
    }
    if (v instanceof Map<?, ?> m) {
      return object(m);
    }
    return string(v.toString());
  }

  static String object(Map<?, ?> map) {
    StringBuilder b = new StringBuilder("{");
    boolean first = true;
    for (Map.Entry<?, ?> e : map.entrySet()) {
      b.append(first ? "" : ",").append(string(String.valueOf(e.getKey()))).append(':');
      b.append(value(e.getValue()));
      first = false;
    }
    return b.append('}').toString();
  }
}
