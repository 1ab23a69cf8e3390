package dev.relay.internal.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;

/**
 * The one place where text that Relay writes (reasons, error texts, results, receiver references,
 * milestones, actors) is cleaned before it is bound, so that no such text can fail a write.
 *
 * <p>PostgreSQL's {@code text} cannot hold U+0000 ({@code invalid byte sequence for encoding
 * "UTF8": 0x00}), and a lone UTF-16 surrogate has no UTF-8 form at all. Both are replaced by
 * U+FFFD, and the stored text says so with a suffix naming how many characters were replaced. A
 * {@code jsonb} value also refuses the escape <code>&#92;u0000</code> (and a lone surrogate escape)
 * inside a string: in JSON text those escapes, and raw NULs and lone surrogates, become <code>
 * &#92;ufffd</code>; the result stays valid JSON, so no suffix is added there, and the replacement
 * character is the mark. Clean text is returned as is (the same instance).
 */
public final class BoundText {
  private static final char REPLACEMENT = '\uFFFD';

  private BoundText() {}

  /** {@code s} with NULs and lone surrogates replaced and counted in a suffix; null stays null. */
  public static String text(String s) {
    if (s == null || isClean(s)) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length() + 64);
    int replaced = 0;
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == 0) {
        b.append(REPLACEMENT);
        replaced++;
      } else if (Character.isHighSurrogate(ch)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        b.append(ch).append(s.charAt(++i));
      } else if (Character.isSurrogate(ch)) {
        b.append(REPLACEMENT);
        replaced++;
      } else {
        b.append(ch);
      }
    }
    if (replaced == 0) {
      return s; // only valid surrogate pairs
    }
    return b.append(" [relay: ")
        .append(replaced)
        .append(replaced == 1 ? " character" : " characters")
        .append(" replaced (NUL or lone surrogate)]")
        .toString();
  }

  /**
   * JSON text with every NUL and lone surrogate, raw or as a <code>&#92;u</code> escape, replaced
   * by the escape <code>&#92;ufffd</code>; null stays null. The text is otherwise unchanged (an
   * escaped backslash followed by {@code u0000} is not an escape and stays).
   */
  public static String json(String s) {
    if (s == null || (s.indexOf('\\') < 0 && isClean(s))) {
      return s;
    }
    StringBuilder b = null;
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char ch = s.charAt(i);
      String replacement = null;
      int consumed = 1;
      if (ch == '\\' && i + 1 < n) {
        char next = s.charAt(i + 1);
        int unit = next == 'u' ? hex(s, i + 2) : -1;
        if (unit < 0) {
          consumed = 2; // any other escape, including an escaped backslash
        } else if (unit == 0 || Character.isLowSurrogate((char) unit)) {
          replacement = "\\ufffd";
          consumed = 6;
        } else if (Character.isHighSurrogate((char) unit)) {
          boolean pair =
              i + 12 <= n
                  && s.charAt(i + 6) == '\\'
                  && s.charAt(i + 7) == 'u'
                  && hex(s, i + 8) >= 0
                  && Character.isLowSurrogate((char) hex(s, i + 8));
          if (pair) {
            consumed = 12;
          } else {
            replacement = "\\ufffd";
            consumed = 6;
          }
        } else {
          consumed = 6;
        }
      } else if (ch == 0) {
        replacement = "\\ufffd";
      } else if (Character.isHighSurrogate(ch)
          && i + 1 < n
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        consumed = 2;
      } else if (Character.isSurrogate(ch)) {
        replacement = "\\ufffd";
      }
      if (replacement != null && b == null) {
        b = new StringBuilder(n + 16).append(s, 0, i);
      }
      if (b != null) {
        if (replacement != null) {
          b.append(replacement);
        } else {
          b.append(s, i, Math.min(n, i + consumed));
        }
      }
      i += consumed - 1;
    }
    return b == null ? s : b.toString();
  }

  /** Binds {@link #text} of {@code s} (or SQL NULL) as parameter {@code index}. */
  public static void bind(PreparedStatement ps, int index, String s) throws SQLException {
    if (s == null) {
      ps.setNull(index, Types.VARCHAR);
    } else {
      ps.setString(index, text(s));
    }
  }

  /** A {@code text[]} of {@link #text} of each value. */
  public static Array textArray(Connection c, String[] values) throws SQLException {
    String[] clean = new String[values.length];
    for (int i = 0; i < values.length; i++) {
      clean[i] = text(values[i]);
    }
    return c.createArrayOf("text", clean);
  }

  /**
   * A {@code text[]} of {@link #json} of each value, for a {@code ::jsonb} cast in the statement.
   */
  public static Array jsonArray(Connection c, String[] values) throws SQLException {
    String[] clean = new String[values.length];
    for (int i = 0; i < values.length; i++) {
      clean[i] = json(values[i]);
    }
    return c.createArrayOf("text", clean);
  }

  private static boolean isClean(String s) {
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == 0 || Character.isSurrogate(ch)) {
        return false;
      }
    }
    return true;
  }

  /** The four hex digits at {@code from} as a UTF-16 unit, or -1. */
  private static int hex(String s, int from) {
    if (from + 4 > s.length()) {
      return -1;
    }
    int v = 0;
    for (int i = from; i < from + 4; i++) {
      int d = Character.digit(s.charAt(i), 16);
      if (d < 0) {
        return -1;
      }
      v = v * 16 + d;
    }
    return v;
  }
}
