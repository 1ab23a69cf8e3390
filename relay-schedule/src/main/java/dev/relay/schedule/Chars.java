package dev.relay.schedule;

import java.util.Locale;

/**
 * Finds and names characters that must not reach the database or a message unchanged: PostgreSQL
 * refuses NUL in text, an unpaired surrogate cannot be encoded as UTF-8, and a control character in
 * a message or a log line garbles it.
 */
final class Chars {
  private Chars() {}

  /** The index of the first character outside printable ASCII (space to {@code ~}), or -1. */
  static int firstOutsidePrintableAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch < 0x20 || ch > 0x7e) {
        return i;
      }
    }
    return -1;
  }

  /** The index of the first control character or unpaired surrogate, or -1. */
  static int firstUnstorable(String s) {
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i); // an unpaired surrogate comes back as itself
      if (Character.isISOControl(cp)
          || cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE) {
        return i;
      }
      i += Character.charCount(cp);
    }
    return -1;
  }

  /**
   * The character at {@code index} named by its code point and position: "U+0000 at character 10".
   */
  static String describe(String s, int index) {
    return String.format(Locale.ROOT, "U+%04X at character %d", s.codePointAt(index), index + 1);
  }

  /** {@code s} with every character outside printable ASCII written as {@code \}{@code uXXXX}. */
  static String escaped(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch < 0x20 || ch > 0x7e) {
        b.append(String.format(Locale.ROOT, "\\u%04X", (int) ch));
      } else {
        b.append(ch);
      }
    }
    return b.toString();
  }
}
