package dev.relay;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;

/**
 * When recurring work is due: a cron expression read in a time zone, or a fixed interval anchored
 * to the epoch; and what to do with slots that passed while no scheduler was running.
 *
 * <pre>{@code
 * Schedule nightly = Schedule.cron("0 30 2 * * *", "Europe/Berlin");       // 02:30 Berlin time
 * Schedule pulse = Schedule.every(Duration.ofMinutes(5))                   // :00, :05, ... UTC
 *     .missedSlots(Schedule.MissedSlots.each(Duration.ofHours(1)));
 * }</pre>
 *
 * <p>This type only describes the timing; the {@code relay-schedule} module turns each due slot
 * into one work item (with an ID that names the schedule and the slot) and decides slots on the
 * database clock, once across all processes. One work item per slot is not one execution: the
 * item's delivery can repeat like any other work's.
 *
 * <p>Values are validated when created and throw {@link ScheduleException} naming the problem. The
 * cron syntax itself is checked by the scheduler (this core library has no cron parser); here only
 * the field count is checked: 5 fields (minute hour day-of-month month day-of-week) or 6 (a seconds
 * field first). Immutable.
 */
public sealed interface Schedule permits Schedule.Cron, Schedule.Every {

  /** The shortest interval accepted. */
  Duration MIN_INTERVAL = Duration.ofSeconds(1);

  /** The longest interval accepted. */
  Duration MAX_INTERVAL = Duration.ofDays(366);

  /**
   * A cron schedule read in {@code zone} (a region ID like {@code Europe/Berlin}, or {@code UTC}),
   * missing slots handled by {@link MissedSlots#latest()}.
   *
   * @throws ScheduleException if the zone is unknown or the expression has not 5 or 6 fields
   */
  static Cron cron(String expression, String zone) {
    if (zone == null || zone.isBlank()) {
      throw new ScheduleException(
          ScheduleException.Problem.UNKNOWN_ZONE, null, "the time zone is empty");
    }
    ZoneId id;
    try {
      id = ZoneId.of(zone.strip());
    } catch (DateTimeException e) {
      throw new ScheduleException(
          ScheduleException.Problem.UNKNOWN_ZONE,
          null,
          "unknown time zone '" + zone + "': use a region ID such as Europe/Berlin, or UTC");
    }
    return new Cron(expression, id, MissedSlots.latest());
  }

  /** A cron schedule read in {@code zone}; see {@link #cron(String, String)}. */
  static Cron cron(String expression, ZoneId zone) {
    return new Cron(expression, zone, MissedSlots.latest());
  }

  /**
   * Slots at every multiple of {@code interval} since 1970-01-01T00:00:00Z (so every 5 minutes
   * means :00, :05, ... whatever the time zone, and daylight-saving changes do not move it),
   * missing slots handled by {@link MissedSlots#latest()}.
   *
   * @throws ScheduleException if the interval is not between 1 second and 366 days, or is not a
   *     whole number of milliseconds
   */
  static Every every(Duration interval) {
    return new Every(interval, MissedSlots.latest());
  }

  /** What happens to slots that passed while no scheduler was deciding. */
  MissedSlots missedSlots();

  /** A copy with another missed-slot policy. */
  Schedule missedSlots(MissedSlots policy);

  /**
   * The canonical text of this definition, stored with the schedule's state and compared when
   * another process registers the same name, for example {@code cron "0 30 2 * * *" Europe/Berlin
   * missed=latest} or {@code every PT5M missed=each(PT1H)}.
   */
  String definition();

  /**
   * A cron expression read in a time zone.
   *
   * <p>Daylight-saving changes: a local time that the zone skips (02:30 in Berlin on the last
   * Sunday of March) gives one slot at the instant the clocks jump (03:00 local); a local time that
   * occurs twice (02:30 on the last Sunday of October) gives one slot, at its first occurrence. For
   * slots evenly spaced in real time, use {@link Schedule#every(Duration)}.
   *
   * @param expression 5 or 6 space-separated fields (6: seconds first); stored with single spaces
   * @param zone the zone the fields are read in
   * @param missedSlots the missed-slot policy
   */
  record Cron(String expression, ZoneId zone, MissedSlots missedSlots) implements Schedule {
    /** Validates and normalises the fields; see {@link Schedule#cron(String, String)}. */
    public Cron {
      if (expression == null || expression.isBlank()) {
        throw new ScheduleException(
            ScheduleException.Problem.INVALID_CRON, null, "the cron expression is empty");
      }
      expression = expression.strip().replaceAll("\\s+", " ");
      int fields = expression.split(" ").length;
      if (fields != 5 && fields != 6) {
        throw new ScheduleException(
            ScheduleException.Problem.INVALID_CRON,
            null,
            "cron expression '"
                + expression
                + "' has "
                + fields
                + " fields; expected 5 (minute hour day month weekday) or 6 (seconds first)");
      }
      if (zone == null) {
        throw new ScheduleException(
            ScheduleException.Problem.UNKNOWN_ZONE, null, "the time zone is missing");
      }
      requirePolicy(missedSlots);
    }

    @Override
    public Cron missedSlots(MissedSlots policy) {
      return new Cron(expression, zone, policy);
    }

    @Override
    public String definition() {
      return "cron \"" + expression + "\" " + zone.getId() + " missed=" + missedSlots.definition();
    }
  }

  /**
   * Slots at every multiple of an interval since the epoch (UTC); daylight-saving changes do not
   * affect it.
   *
   * @param interval between 1 second and 366 days, a whole number of milliseconds
   * @param missedSlots the missed-slot policy
   */
  record Every(Duration interval, MissedSlots missedSlots) implements Schedule {
    /** Validates the fields; see {@link Schedule#every(Duration)}. */
    public Every {
      if (interval == null
          || interval.compareTo(MIN_INTERVAL) < 0
          || interval.compareTo(MAX_INTERVAL) > 0
          || interval.getNano() % 1_000_000 != 0) {
        throw new ScheduleException(
            ScheduleException.Problem.INVALID_INTERVAL,
            null,
            "interval "
                + interval
                + " must be between "
                + MIN_INTERVAL
                + " and "
                + MAX_INTERVAL
                + ", a whole number of milliseconds");
      }
      requirePolicy(missedSlots);
    }

    @Override
    public Every missedSlots(MissedSlots policy) {
      return new Every(interval, policy);
    }

    @Override
    public String definition() {
      return "every " + interval + " missed=" + missedSlots.definition();
    }
  }

  /**
   * What a scheduler does with slots it finds late: slots that passed more than the scheduler's
   * lateness tolerance ago without being decided (every scheduler was down, or the database was
   * unreachable). Slots decided on time are always enqueued.
   */
  sealed interface MissedSlots permits MissedSlots.Skip, MissedSlots.Latest, MissedSlots.Each {
    /** The longest catch-up window: well inside the default identity horizon of 90 days. */
    Duration MAX_WINDOW = Duration.ofDays(30);

    /** Late slots are dropped; the next on-time slot runs. */
    static MissedSlots skip() {
      return new Skip();
    }

    /**
     * The latest late slot runs once (unless an on-time slot runs anyway); older ones are dropped.
     */
    static MissedSlots latest() {
      return new Latest();
    }

    /**
     * Every late slot no older than {@code window} runs, each as its own work item; older ones are
     * dropped. Keep the window shorter than the identity horizon of purged work (tombstones), so a
     * slot enqueued again is still recognised as the same work.
     *
     * @param window between 1 second and {@link #MAX_WINDOW}
     */
    static MissedSlots each(Duration window) {
      return new Each(window);
    }

    /** The canonical text: {@code skip}, {@code latest} or {@code each(PT1H)}. */
    String definition();

    /** Drops late slots. */
    record Skip() implements MissedSlots {
      @Override
      public String definition() {
        return "skip";
      }
    }

    /** Runs the latest late slot once. */
    record Latest() implements MissedSlots {
      @Override
      public String definition() {
        return "latest";
      }
    }

    /**
     * Runs each late slot within a window.
     *
     * @param window how far back late slots still run
     */
    record Each(Duration window) implements MissedSlots {
      /** Validates the window. */
      public Each {
        if (window == null
            || window.compareTo(Duration.ofSeconds(1)) < 0
            || window.compareTo(MAX_WINDOW) > 0) {
          throw new ScheduleException(
              ScheduleException.Problem.INVALID_MISSED_SLOTS,
              null,
              "catch-up window " + window + " must be between PT1S and " + MAX_WINDOW);
        }
      }

      @Override
      public String definition() {
        return "each(" + window + ")";
      }
    }
  }

  private static void requirePolicy(MissedSlots policy) {
    if (policy == null) {
      throw new ScheduleException(
          ScheduleException.Problem.INVALID_MISSED_SLOTS, null, "the policy is missing");
    }
  }
}
