package dev.relay.console;

import dev.relay.admin.DurationText;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How the console writes values on a page (templates call it as {@code fmt}) and builds its links.
 * It only turns values into text; escaping is the template engine's, which escapes every {@code
 * th:text} and attribute value.
 */
final class Format {
  static final Format INSTANCE = new Format();

  private Format() {}

  /** {@code value} as text: {@code null} as an em dash, a duration in words, an instant as is. */
  public String text(Object value) {
    if (value == null) {
      return "\u2014";
    }
    if (value instanceof Duration d) {
      return age(d);
    }
    if (value instanceof Instant t) {
      return t.toString();
    }
    return String.valueOf(value);
  }

  /**
   * An item's or attempt's outcome evidence, stored as {@code delivered}, {@code not_delivered} or
   * {@code unknown}, in words; {@code null} as an em dash, a value this version does not know as it
   * is. The stored value stays what the work list's outcome filter takes: pages carry it as the
   * label's title.
   */
  public String outcome(String stored) {
    if (stored == null) {
      return "\u2014";
    }
    return switch (stored) {
      case "delivered" -> "delivered (the receiver accepted it)";
      case "not_delivered" -> "not delivered (refused, or never sent)";
      case "unknown" -> "unknown (it may or may not have taken effect)";
      default -> stored;
    };
  }

  /** Instance form of {@link #age(Duration)} for templates; {@code null} as an em dash. */
  public String duration(Duration d) {
    return d == null ? "\u2014" : age(d);
  }

  /**
   * A duration as an operator reads it: {@code 0 s}, {@code 42 s}, {@code 3 min 5 s}, {@code 2 h 4
   * min}.
   */
  static String age(Duration d) {
    return DurationText.age(d);
  }

  /**
   * A latency as an operator reads it: milliseconds below a second ({@code 49 ms}, as {@code relay
   * status} shows them), then seconds to a tenth, then as {@link #age(Duration)}; {@code null} as
   * an em dash.
   */
  static String latency(Duration d) {
    return d == null ? "\u2014" : DurationText.latency(d);
  }

  /** {@code base} with the non-empty parameters URL-encoded. */
  static String url(String base, Map<String, String> params) {
    StringBuilder b = new StringBuilder(base);
    char sep = '?';
    for (Map.Entry<String, String> e : params.entrySet()) {
      if (e.getValue() != null && !e.getValue().isEmpty()) {
        b.append(sep)
            .append(e.getKey())
            .append('=')
            .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
        sep = '&';
      }
    }
    return b.toString();
  }

  /** {@code base?name=value...} from name, value pairs, URL-encoded; empty values left out. */
  static String url(String base, String... pairs) {
    Map<String, String> p = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      p.put(pairs[i], pairs[i + 1]);
    }
    return url(base, p);
  }
}
