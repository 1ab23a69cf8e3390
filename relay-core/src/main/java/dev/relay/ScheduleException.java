package dev.relay;

/**
 * A schedule refused: an invalid cron expression, an unknown time zone, an interval out of range,
 * an invalid name or missed-slot window, or a schedule name already stored with a different
 * definition. Raised before anything is written (a definition conflict is found while registering,
 * in a transaction that is rolled back).
 */
public final class ScheduleException extends RelayException {
  private static final long serialVersionUID = 1L;

  /** What is wrong with the schedule. */
  public enum Problem {
    /** The cron expression does not parse (wrong field count, a value out of range, a typo). */
    INVALID_CRON,
    /** The time zone is not a known region or offset ID. */
    UNKNOWN_ZONE,
    /** The interval is zero, negative, shorter than one second or longer than a year. */
    INVALID_INTERVAL,
    /** The missed-slot policy is missing or its window is out of range. */
    INVALID_MISSED_SLOTS,
    /** The schedule's name or kind is empty or uses characters a work ID cannot hold. */
    INVALID_NAME,
    /** The name is stored with a different definition (kind, timing or missed-slot policy). */
    DEFINITION_CONFLICT
  }

  private final Problem problem;
  private final String scheduleName;

  /**
   * @param problem what is wrong
   * @param scheduleName the schedule's name, or {@code null} when the timing was refused before it
   *     was given a name
   * @param detail the offending value and what is allowed
   */
  public ScheduleException(Problem problem, String scheduleName, String detail) {
    super(
        (scheduleName == null ? "schedule" : "schedule '" + scheduleName + "'")
            + " refused ("
            + problem.name().toLowerCase(java.util.Locale.ROOT)
            + "): "
            + detail);
    this.problem = problem;
    this.scheduleName = scheduleName;
  }

  /** What is wrong. */
  public Problem problem() {
    return problem;
  }

  /** The schedule's name, or {@code null} if it had none yet. */
  public String scheduleName() {
    return scheduleName;
  }
}
