package dev.relay.schedule;

import dev.relay.Schedule.MissedSlots;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What one decision does for one schedule: the slots to enqueue, how many due slots the missed-slot
 * policy drops, the new last slot and the next slot. A pure function of the definition, the last
 * slot and the database clock, so tests can check policies and daylight-saving rules without
 * waiting.
 *
 * @param enqueue the slots that become work, oldest first
 * @param skipped due slots dropped by the policy (counted up to {@link #COUNT_LIMIT}; more are not
 *     counted)
 * @param lastSlot the latest slot decided after this decision (never earlier than before)
 * @param nextSlot the first slot after {@code lastSlot} and the clock, or {@code null} if none
 */
record Plan(List<Instant> enqueue, long skipped, Instant lastSlot, Instant nextSlot) {
  /** Most slots one decision enqueues; a longer catch-up continues in the next decision. */
  static final int MAX_SLOTS = 1_000;

  /** Most dropped slots counted one by one in one decision. */
  static final int COUNT_LIMIT = 10_000;

  Plan {
    enqueue = List.copyOf(enqueue);
  }

  /**
   * Decides the slots in {@code (after, now]}.
   *
   * @param slots the schedule's slots
   * @param policy what to do with late slots
   * @param after the last slot decided before (or the schedule's creation)
   * @param now the database clock, read after the schedule's state row was locked
   * @param lateAfter how late a slot may be decided and still count as on time
   */
  static Plan decide(
      Slots slots, MissedSlots policy, Instant after, Instant now, Duration lateAfter) {
    Instant latest = slots.latestAtOrBefore(now);
    if (latest == null || !latest.isAfter(after)) {
      return new Plan(List.of(), 0, after, slots.next(later(after, now)));
    }
    Instant onTimeFrom = now.minus(lateAfter);
    Instant horizon =
        policy instanceof MissedSlots.Each each
            ? earlier(now.minus(each.window()), onTimeFrom)
            : onTimeFrom;
    // Slots in [horizon, now] and after `after`: on time, or inside the catch-up window.
    List<Instant> inHorizon = new ArrayList<>();
    Instant cursor = later(after, horizon.minusNanos(1));
    for (Instant s = slots.next(cursor);
        s != null && !s.isAfter(now) && inHorizon.size() < MAX_SLOTS;
        s = slots.next(s)) {
      inHorizon.add(s);
    }
    boolean truncated =
        inHorizon.size() == MAX_SLOTS && inHorizon.get(MAX_SLOTS - 1).isBefore(latest);
    List<Instant> enqueue =
        policy instanceof MissedSlots.Latest && inHorizon.isEmpty() ? List.of(latest) : inHorizon;
    long late = countBefore(slots, after, horizon);
    long skipped = late - (enqueue.size() - inHorizon.size());
    Instant last = truncated ? inHorizon.get(MAX_SLOTS - 1) : latest;
    return new Plan(enqueue, skipped, last, slots.next(later(last, truncated ? last : now)));
  }

  /** Slots in {@code (after, before)}, counted up to {@link #COUNT_LIMIT}. */
  private static long countBefore(Slots slots, Instant after, Instant before) {
    long n = 0;
    for (Instant s = slots.next(after);
        s != null && s.isBefore(before) && n < COUNT_LIMIT;
        s = slots.next(s)) {
      n++;
    }
    return n;
  }

  private static Instant earlier(Instant a, Instant b) {
    return a.isBefore(b) ? a : b;
  }

  private static Instant later(Instant a, Instant b) {
    return a.isAfter(b) ? a : b;
  }
}
