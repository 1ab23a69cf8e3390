package dev.relay.app;

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

  /** What a password is printed as, as {@code relay serve --print-config} prints it. */
  static final String MASK = "******";

  /** A {@code password=} parameter of a URL (or a properties string), up to its end. */
  private static final Pattern PASSWORD_PARAMETER = Pattern.compile("(?i)(password=)[^&;\\s'\"]*");

  /** The password of a {@code //user:password@host} user-info part. */
  private static final Pattern USER_INFO_PASSWORD =
      Pattern.compile("(//[^/:@\\s'\"]*:)[^/@\\s'\"]*@");

  private Messages() {}

  /**
   * {@code text} with the password of every JDBC URL in it masked: a {@code password=...} parameter
   * and the password of a {@code user:password@host} form. For every message that may echo a URL
   * the user gave (a bad {@code --jdbc-url}, an unmatched argument, a driver error).
   */
  static String maskPasswords(String text) {
    if (text == null) {
      return null;
    }
    String masked = PASSWORD_PARAMETER.matcher(text).replaceAll("$1" + MASK);
    return USER_INFO_PASSWORD.matcher(masked).replaceAll("$1" + MASK + "@");
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
