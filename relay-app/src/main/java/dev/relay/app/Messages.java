package dev.relay.app;

import dev.relay.test.JdbcUrls;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Error messages as the command prints them: one line, with no value echoed at full length and no
 * password of a JDBC URL echoed at all.
 */
final class Messages {
  /** Longer unbroken runs are shortened: a 10,000-character kind is not printed whole. */
  static final int LONGEST = 100;

  /** A run of characters other than white space and quotes, longer than {@link #LONGEST}. */
  private static final Pattern LONG_RUN = Pattern.compile("[^\\s'\"]{" + (LONGEST + 1) + ",}");

  private Messages() {}

  /** {@code text} with every JDBC URL's password masked ({@link JdbcUrls#maskPasswords}). */
  static String maskPasswords(String text) {
    return JdbcUrls.maskPasswords(text);
  }

  /**
   * {@code message} on one line (line breaks become "; "), passwords masked ({@link
   * #maskPasswords}), each unbroken run of more than {@link #LONGEST} characters cut to its start,
   * an ellipsis and its length.
   */
  static String oneLine(String message) {
    String m =
        message == null ? "" : maskPasswords(message.strip().replaceAll("\\s*\\R\\s*", "; "));
    Matcher run = LONG_RUN.matcher(m);
    StringBuilder out = new StringBuilder();
    while (run.find()) {
      String r = run.group();
      run.appendReplacement(
          out, Matcher.quoteReplacement(r.substring(0, 40) + "… (" + r.length() + " characters)"));
    }
    run.appendTail(out);
    return out.toString();
  }
}
