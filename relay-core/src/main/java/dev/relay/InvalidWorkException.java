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
        "invalid work"
            + (workId == null ? "" : " '" + workId + "'")
            + ": "
            + field
            + " "
            + problem);
    this.field = field;
    this.workId = workId;
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
