package dev.relay.schedule;

import dev.relay.Schedule;
import java.time.Instant;

/**
 * The slots of one schedule as instants: a pure function of the definition, so every process
 * computes the same ones. Both methods must be monotone: {@code next(a) > a}, {@code
 * latestAtOrBefore(t) <= t}, and no slot lies strictly between {@code latestAtOrBefore(t)} and
 * {@code next(t)}.
 */
interface Slots {
  /** The first slot strictly after {@code after}, or {@code null} if the schedule never fires. */
  Instant next(Instant after);

  /** The last slot at or before {@code t}, or {@code null} if there is none. */
  Instant latestAtOrBefore(Instant t);

  /** The slots of {@code schedule}; a cron expression is parsed here. */
  static Slots of(String name, Schedule schedule) {
    if (schedule instanceof Schedule.Cron cron) {
      return CronSlots.parse(name, cron);
    }
    return new IntervalSlots(((Schedule.Every) schedule).interval());
  }
}
