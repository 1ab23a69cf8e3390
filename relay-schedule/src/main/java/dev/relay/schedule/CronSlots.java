package dev.relay.schedule;

import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import dev.relay.Schedule;
import dev.relay.ScheduleException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneRules;
import java.util.Optional;

/**
 * A cron expression read in a time zone, with Relay's own daylight-saving rule rather than the cron
 * library's.
 *
 * <p>The expression is matched against local date-times (cron-utils runs in UTC, where no local
 * time is skipped or repeated), and each match becomes an instant: a local time the zone skips
 * becomes the instant of the jump (02:30 on a spring-forward night in Berlin becomes 03:00 CEST),
 * and a local time that occurs twice becomes its first occurrence. This mapping never decreases as
 * local time increases, which {@link #next} and {@link #latestAtOrBefore} rely on. (cron-utils' own
 * zoned evaluation drops the skipped 02:30 entirely and is not consistent between its next and last
 * executions in the repeated hour.)
 */
final class CronSlots implements Slots {
  private static final CronParser UNIX =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  private static final CronParser WITH_SECONDS =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

  private final ExecutionTime execution;
  private final ZoneRules rules;
  private final ZoneId zone;

  private CronSlots(ExecutionTime execution, ZoneId zone) {
    this.execution = execution;
    this.zone = zone;
    this.rules = zone.getRules();
  }

  static CronSlots parse(String name, Schedule.Cron cron) {
    String expression = cron.expression();
    // Cron syntax is printable ASCII. Checked first: cron-utils takes a trailing NUL in the last
    // field, which PostgreSQL would then refuse in the stored definition.
    int bad = Chars.firstOutsidePrintableAscii(expression);
    if (bad >= 0) {
      throw new ScheduleException(
          ScheduleException.Problem.INVALID_CRON,
          name,
          "cron expression '"
              + Chars.escaped(expression)
              + "' contains "
              + Chars.describe(expression, bad)
              + ": a cron expression is printable ASCII (digits, names such as MON or JAN, and"
              + " * , - / ? L W #)");
    }
    CronParser parser = expression.split(" ").length == 5 ? UNIX : WITH_SECONDS;
    ExecutionTime execution;
    try {
      execution = ExecutionTime.forCron(parser.parse(expression));
    } catch (IllegalArgumentException e) {
      throw new ScheduleException(
          ScheduleException.Problem.INVALID_CRON,
          name,
          "cron expression '" + expression + "' does not parse: " + e.getMessage());
    }
    CronSlots slots = new CronSlots(execution, cron.zone());
    if (slots.nextLocal(LocalDateTime.of(2000, 1, 1, 0, 0)) == null) {
      throw new ScheduleException(
          ScheduleException.Problem.INVALID_CRON,
          name,
          "cron expression '" + expression + "' never matches a date");
    }
    return slots;
  }

  @Override
  public Instant next(Instant after) {
    LocalDateTime local = after.atZone(zone).toLocalDateTime();
    // Local times before `local` map to instants <= after (the mapping is monotone), so the first
    // match after it whose instant passes `after` is the answer. Only in a repeated hour does this
    // loop more than once: matches in its second pass map to the first pass, before `after`.
    while (true) {
      local = nextLocal(local);
      if (local == null) {
        return null;
      }
      Instant slot = instantOf(local);
      if (slot.isAfter(after)) {
        return slot;
      }
    }
  }

  @Override
  public Instant latestAtOrBefore(Instant t) {
    LocalDateTime local = t.atZone(zone).toLocalDateTime().truncatedTo(ChronoUnit.SECONDS);
    // cron-utils' last execution is strictly before its argument; one second on includes `local`.
    Optional<ZonedDateTime> last = execution.lastExecution(utc(local.plusSeconds(1)));
    return last.map(z -> instantOf(z.toLocalDateTime())).orElse(null);
  }

  /** The instant of a local date-time under the rule in the class comment. */
  Instant instantOf(LocalDateTime local) {
    if (rules.getValidOffsets(local).isEmpty()) {
      return rules.getTransition(local).getInstant(); // skipped: the moment the clocks jump
    }
    return ZonedDateTime.ofLocal(local, zone, null).toInstant(); // repeated: the earlier offset
  }

  private LocalDateTime nextLocal(LocalDateTime local) {
    return execution.nextExecution(utc(local)).map(ZonedDateTime::toLocalDateTime).orElse(null);
  }

  private static ZonedDateTime utc(LocalDateTime local) {
    return local.atZone(ZoneOffset.UTC);
  }
}
