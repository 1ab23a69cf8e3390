package dev.relay.console;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A page being written. Everything that is not a literal of the console's own markup goes through
 * {@link #text(Object)} or {@link #attr(Object)}, which escape it: there is no way to append a
 * stored string unescaped.
 */
final class Html {
  private final StringBuilder out = new StringBuilder(8_192);

  /** Appends markup. Only for constants of this module: never pass stored or request data. */
  Html tag(String markup) {
    out.append(markup);
    return this;
  }

  /** Appends {@code value} escaped as element text; {@code null} as an em dash. */
  Html text(Object value) {
    out.append(escape(value == null ? "\u2014" : display(value)));
    return this;
  }

  /** Appends {@code value} escaped for a double-quoted attribute. */
  Html attr(Object value) {
    out.append(escape(value == null ? "" : String.valueOf(value)));
    return this;
  }

  /** A table cell holding {@code value}. */
  Html cell(Object value) {
    return tag("<td>").text(value).tag("</td>");
  }

  /** A link to {@code href} (already built by {@link #url}) with {@code label} as text. */
  Html link(String href, Object label) {
    return tag("<a href=\"").attr(href).tag("\">").text(label).tag("</a>");
  }

  /** A hidden form field. */
  Html hidden(String name, Object value) {
    return tag("<input type=\"hidden\" name=\"")
        .attr(name)
        .tag("\" value=\"")
        .attr(value)
        .tag("\">");
  }

  @Override
  public String toString() {
    return out.toString();
  }

  static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  static String display(Object value) {
    if (value instanceof Duration d) {
      return age(d);
    }
    if (value instanceof Instant t) {
      return t.toString();
    }
    return String.valueOf(value);
  }

  /**
   * A duration as an operator reads it: {@code 0 s}, {@code 42 s}, {@code 3 min 5 s}, {@code 2 h 4
   * min}.
   */
  static String age(Duration d) {
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
   * {@code base} with the non-empty parameters URL-encoded (the result still needs {@link #attr}).
   */
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

  /** {@code base?name=value}, URL-encoded. */
  static String url(String base, String name, String value) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(name, value);
    return url(base, p);
  }
}
