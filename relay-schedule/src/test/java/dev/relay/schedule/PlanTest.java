package dev.relay.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Schedule;
import dev.relay.Schedule.MissedSlots;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The missed-slot policies as pure decisions: a schedule every minute, down for ten minutes. */
class PlanTest {
  private final Slots everyMinute = Slots.of("m", Schedule.every(Duration.ofMinutes(1)));
  private final Instant last = Instant.parse("2026-12-02T02:00:00Z");
  private final Instant now = Instant.parse("2026-12-02T02:10:20Z"); // slots 02:01 .. 02:10 due
  private final Duration lateAfter = Duration.ofSeconds(30); // only 02:10 is on time

  @Test
  void onTimeSlotIsEnqueuedUnderEveryPolicy() {
    Instant justAfter = Instant.parse("2026-12-02T02:01:05Z");
    for (MissedSlots p :
        new MissedSlots[] {
          MissedSlots.skip(), MissedSlots.latest(), MissedSlots.each(Duration.ofHours(1))
        }) {
      Plan plan = Plan.decide(everyMinute, p, last, justAfter, lateAfter);
      assertThat(plan.enqueue()).containsExactly(Instant.parse("2026-12-02T02:01:00Z"));
      assertThat(plan.skipped()).isZero();
      assertThat(plan.lastSlot()).isEqualTo(Instant.parse("2026-12-02T02:01:00Z"));
      assertThat(plan.nextSlot()).isEqualTo(Instant.parse("2026-12-02T02:02:00Z"));
    }
  }

  @Test
  void skipDropsLateSlotsAndKeepsTheOnTimeOne() {
    Plan plan = Plan.decide(everyMinute, MissedSlots.skip(), last, now, lateAfter);
    assertThat(plan.enqueue()).containsExactly(Instant.parse("2026-12-02T02:10:00Z"));
    assertThat(plan.skipped()).isEqualTo(9);
    assertThat(plan.lastSlot()).isEqualTo(Instant.parse("2026-12-02T02:10:00Z"));
  }

  @Test
  void skipWithNoOnTimeSlotEnqueuesNothingButMovesOn() {
    Instant late = Instant.parse("2026-12-02T02:10:45Z");
    Plan plan = Plan.decide(everyMinute, MissedSlots.skip(), last, late, lateAfter);
    assertThat(plan.enqueue()).isEmpty();
    assertThat(plan.skipped()).isEqualTo(10);
    assertThat(plan.lastSlot()).isEqualTo(Instant.parse("2026-12-02T02:10:00Z"));
    assertThat(plan.nextSlot()).isEqualTo(Instant.parse("2026-12-02T02:11:00Z"));
  }

  @Test
  void latestRunsTheLatestLateSlotOnceWhenNoneIsOnTime() {
    Instant late = Instant.parse("2026-12-02T02:10:45Z");
    Plan plan = Plan.decide(everyMinute, MissedSlots.latest(), last, late, lateAfter);
    assertThat(plan.enqueue()).containsExactly(Instant.parse("2026-12-02T02:10:00Z"));
    assertThat(plan.skipped()).isEqualTo(9);
  }

  @Test
  void eachRunsEveryLateSlotInsideTheWindowAndDropsOlderOnes() {
    Plan plan =
        Plan.decide(everyMinute, MissedSlots.each(Duration.ofMinutes(5)), last, now, lateAfter);
    assertThat(plan.enqueue())
        .containsExactly(
            Instant.parse("2026-12-02T02:06:00Z"),
            Instant.parse("2026-12-02T02:07:00Z"),
            Instant.parse("2026-12-02T02:08:00Z"),
            Instant.parse("2026-12-02T02:09:00Z"),
            Instant.parse("2026-12-02T02:10:00Z"));
    assertThat(plan.skipped()).isEqualTo(5);
  }

  @Test
  void longCatchUpIsCutIntoBoundedDecisions() {
    Slots everySecond = Slots.of("s", Schedule.every(Duration.ofSeconds(1)));
    Instant hourLater = last.plus(Duration.ofHours(1));
    Plan first =
        Plan.decide(everySecond, MissedSlots.each(Duration.ofHours(2)), last, hourLater, lateAfter);
    assertThat(first.enqueue()).hasSize(Plan.MAX_SLOTS);
    assertThat(first.lastSlot()).isEqualTo(last.plusSeconds(Plan.MAX_SLOTS));
    assertThat(first.nextSlot()).isEqualTo(last.plusSeconds(Plan.MAX_SLOTS + 1));
    Plan second =
        Plan.decide(
            everySecond,
            MissedSlots.each(Duration.ofHours(2)),
            first.lastSlot(),
            hourLater,
            lateAfter);
    assertThat(second.enqueue().get(0)).isEqualTo(first.nextSlot());
  }

  @Test
  void nothingDueLeavesTheLastSlotAlone() {
    Instant soon = Instant.parse("2026-12-02T02:00:30Z");
    Plan plan = Plan.decide(everyMinute, MissedSlots.latest(), last, soon, lateAfter);
    assertThat(plan.enqueue()).isEmpty();
    assertThat(plan.lastSlot()).isEqualTo(last);
    assertThat(plan.nextSlot()).isEqualTo(Instant.parse("2026-12-02T02:01:00Z"));
  }
}
