package dev.relay;

/**
 * Work refused before anything was sent to the database: an empty or oversized ID, invalid JSON, an
 * inconsistent schedule, a repeated ID inside one bulk call. Nothing was written; the caller's
 * transaction is untouched and may continue or roll back as it chooses.
 */
public final class InvalidWorkException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String field;
  private final String workId;

  /**
   * @param workId the work ID concerned, or {@code null} when the ID itself is the problem
   * @param field the name of the offending field ({@code workId}, {@code payload}, ...)
   * @param problem what is wrong, in words that name the allowed range
   */
  public InvalidWorkException(String workId, String field, String problem) {
    super(
        printable(
            "invalid work"
                + (workId == null ? "" : " '" + workId + "'")
                + ": "
                + field
                + " "
                + problem));
    this.field = field;
    this.workId = workId;
  }

  /**
   * {@code text} with each control character and unpaired surrogate written as a Java-style escape
   * (a backslash, {@code u}, four hex digits): a refused ID holding a NUL or a line break must not
   * end or split the log line that reports it.
   */
  static String printable(String text) {
    StringBuilder b = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        b.append(c).append(text.charAt(++i));
      } else if (Character.isISOControl(c) || Character.isSurrogate(c)) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** The name of the offending field. */
  public String field() {
    return field;
  }

  /** The work ID concerned, or {@code null}. */
  public String workId() {
    return workId;
  }
}
