package dev.relay.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Schedule;
import dev.relay.ScheduleException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Slots computed against cron-utils and the zone rules: no database, no waiting. */
class SlotsTest {
  private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

  private static List<Instant> between(Slots slots, String from, String to) {
    List<Instant> all = new ArrayList<>();
    Instant end = Instant.parse(to);
    for (Instant s = slots.next(Instant.parse(from)); !s.isAfter(end); s = slots.next(s)) {
      all.add(s);
    }
    return all;
  }

  private static List<Instant> instants(String... texts) {
    return java.util.Arrays.stream(texts).map(Instant::parse).toList();
  }

  @Nested
  class DaylightSaving {
    private final Slots daily0230 = Slots.of("nightly", Schedule.cron("30 2 * * *", BERLIN));

    @Test
    void skippedHourRunsOnceWhenTheClocksJump() {
      // 2026-03-29: Berlin goes from 02:00 CET straight to 03:00 CEST; 02:30 does not exist.
      assertThat(between(daily0230, "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-03-28T01:30:00Z", // 02:30 CET
                  "2026-03-29T01:00:00Z", // 03:00 CEST, the instant of the jump
                  "2026-03-30T00:30:00Z")); // 02:30 CEST
    }

    @Test
    void repeatedHourRunsOnceAtTheFirstOccurrence() {
      // 2026-10-25: Berlin goes from 03:00 CEST back to 02:00 CET; 02:30 occurs twice.
      assertThat(between(daily0230, "2026-10-23T12:00:00Z", "2026-10-26T12:00:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-10-24T00:30:00Z", // 02:30 CEST
                  "2026-10-25T00:30:00Z", // 02:30 CEST, the first occurrence; not 01:30Z again
                  "2026-10-26T01:30:00Z")); // 02:30 CET
    }

    @Test
    void latestAtOrBeforeAgreesWithNextAcrossBothChanges() {
      assertThat(daily0230.latestAtOrBefore(Instant.parse("2026-03-29T02:00:00Z")))
          .isEqualTo(Instant.parse("2026-03-29T01:00:00Z"));
      // During the repeated hour's second pass (02:40 CET) the slot is still the first 02:30.
      assertThat(daily0230.latestAtOrBefore(Instant.parse("2026-10-25T01:40:00Z")))
          .isEqualTo(Instant.parse("2026-10-25T00:30:00Z"));
      assertThat(daily0230.next(Instant.parse("2026-10-25T01:40:00Z")))
          .isEqualTo(Instant.parse("2026-10-26T01:30:00Z"));
    }

    @Test
    void halfHourlyScheduleCollapsesTheSkippedHourAndSkipsTheRepeatedOne() {
      Slots halfHourly = Slots.of("half", Schedule.cron("*/30 * * * *", BERLIN));
      // Spring: 02:00 and 02:30 do not exist; both become 03:00 CEST, the same slot as 03:00.
      assertThat(between(halfHourly, "2026-03-29T00:00:00Z", "2026-03-29T02:00:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-03-29T00:30:00Z",
                  "2026-03-29T01:00:00Z",
                  "2026-03-29T01:30:00Z",
                  "2026-03-29T02:00:00Z"));
      // Autumn: 02:00 and 02:30 run in the CEST pass only; the CET pass has no slot.
      assertThat(between(halfHourly, "2026-10-24T23:00:00Z", "2026-10-25T02:30:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-10-24T23:30:00Z",
                  "2026-10-25T00:00:00Z",
                  "2026-10-25T00:30:00Z",
                  "2026-10-25T02:00:00Z",
                  "2026-10-25T02:30:00Z"));
    }

    @Test
    void intervalIgnoresDaylightSaving() {
      Slots hourly = Slots.of("hourly", Schedule.every(Duration.ofHours(1)));
      assertThat(between(hourly, "2026-10-24T23:59:00Z", "2026-10-25T03:00:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-10-25T00:00:00Z",
                  "2026-10-25T01:00:00Z",
                  "2026-10-25T02:00:00Z",
                  "2026-10-25T03:00:00Z"));
    }
  }

  @Nested
  class Intervals {
    private final Slots everySecond = Slots.of("pulse", Schedule.every(Duration.ofSeconds(1)));

    @Test
    void slotsAreMultiplesOfTheIntervalSinceTheEpoch() {
      Slots sevenMinutes = Slots.of("seven", Schedule.every(Duration.ofMinutes(7)));
      Instant next = sevenMinutes.next(Instant.parse("2026-12-02T02:00:00Z"));
      assertThat(next.getEpochSecond() % 420).isZero();
      assertThat(sevenMinutes.latestAtOrBefore(next)).isEqualTo(next);
      assertThat(sevenMinutes.next(next)).isEqualTo(next.plus(Duration.ofMinutes(7)));
    }

    @Test
    void nextIsStrictlyAfterAndLatestIsAtOrBefore() {
      Instant t = Instant.parse("2026-12-02T02:00:00.750Z");
      assertThat(everySecond.next(t)).isEqualTo(Instant.parse("2026-12-02T02:00:01Z"));
      assertThat(everySecond.latestAtOrBefore(t)).isEqualTo(Instant.parse("2026-12-02T02:00:00Z"));
      Instant exact = Instant.parse("2026-12-02T02:00:01Z");
      assertThat(everySecond.next(exact)).isEqualTo(Instant.parse("2026-12-02T02:00:02Z"));
      assertThat(everySecond.latestAtOrBefore(exact)).isEqualTo(exact);
    }
  }

  @Nested
  class Cron {
    @Test
    void sixFieldsCountSeconds() {
      Slots every15s = Slots.of("quarter", Schedule.cron("*/15 * * * * *", "UTC"));
      assertThat(between(every15s, "2026-12-02T02:00:00Z", "2026-12-02T02:01:00Z"))
          .containsExactlyElementsOf(
              instants(
                  "2026-12-02T02:00:15Z",
                  "2026-12-02T02:00:30Z",
                  "2026-12-02T02:00:45Z",
                  "2026-12-02T02:01:00Z"));
    }
  }

  @Nested
  class BadInput {
    @Test
    void invalidCronIsRefusedNamingTheExpression() {
      assertThatThrownBy(() -> Slots.of("nightly", Schedule.cron("61 2 * * *", "UTC")))
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> {
                assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_CRON);
                assertThat(e.scheduleName()).isEqualTo("nightly");
              })
          .hasMessageContaining("'61 2 * * *'")
          .hasMessageContaining("61");
      assertThatThrownBy(() -> Schedule.cron("every day", "UTC"))
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_CRON))
          .hasMessageContaining("2 fields");
      assertThatThrownBy(() -> Slots.of("never", Schedule.cron("0 0 31 2 *", "UTC")))
          .isInstanceOf(ScheduleException.class)
          .hasMessageContaining("never matches");
    }

    @Test
    void unknownZoneIsRefusedNamingTheZone() {
      assertThatThrownBy(() -> Schedule.cron("30 2 * * *", "Europe/Atlantis"))
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> assertThat(e.problem()).isEqualTo(ScheduleException.Problem.UNKNOWN_ZONE))
          .hasMessageContaining("'Europe/Atlantis'");
    }

    @Test
    void nonPositiveOrTinyIntervalIsRefused() {
      for (Duration bad :
          new Duration[] {Duration.ZERO, Duration.ofSeconds(-5), Duration.ofMillis(500), null}) {
        assertThatThrownBy(() -> Schedule.every(bad))
            .isInstanceOfSatisfying(
                ScheduleException.class,
                e -> assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_INTERVAL))
            .hasMessageContaining("interval " + bad);
      }
    }

    @Test
    void catchUpWindowOutOfRangeIsRefused() {
      assertThatThrownBy(() -> Schedule.MissedSlots.each(Duration.ofDays(31)))
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e ->
                  assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_MISSED_SLOTS))
          .hasMessageContaining("PT744H");
    }
  }
}
