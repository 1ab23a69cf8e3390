package dev.relay.app;

import static dev.relay.app.CommandLineTest.on;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.relay.Schedule;
import dev.relay.schedule.ScheduleStatus;
import dev.relay.schedule.Scheduler;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** {@code relay schedules}, run as a process against schedules a real scheduler registered. */
@RelayDatabaseTest
class SchedulesCommandTest {
  @Test
  void listsEachScheduleWithItsLastAndNextSlot(TestDatabase db) throws Exception {
    Scheduler scheduler =
        Scheduler.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(50))
            .schedule("pulse", "tick", Schedule.every(Duration.ofSeconds(1)))
            .schedule("nightly", "report", Schedule.cron("30 2 * * *", "Europe/Berlin"))
            .build();
    try (scheduler) {
      scheduler.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  ScheduleStatus.list(db.dataSource(), db.schema()).stream()
                      .anyMatch(s -> s.name().equals("pulse") && s.lastSlot() != null));
    }

    JsonNode root = OperatorCommandsTest.json(Cli.run(on(db, "schedules", "--json")));
    JsonNode schedules = root.get("schedules");
    assertThat(schedules).hasSize(2);
    JsonNode nightly = schedules.get(0);
    assertThat(nightly.get("name").asText()).isEqualTo("nightly");
    assertThat(nightly.get("definition").asText())
        .isEqualTo("cron \"30 2 * * *\" Europe/Berlin missed=latest");
    assertThat(nightly.get("last_slot").isNull()).isTrue();
    assertThat(
            Instant.parse(nightly.get("next_slot").asText())
                .atZone(java.time.ZoneId.of("Europe/Berlin"))
                .getMinute())
        .isEqualTo(30);
    JsonNode pulse = schedules.get(1);
    Instant last = Instant.parse(pulse.get("last_slot").asText());
    assertThat(Instant.parse(pulse.get("next_slot").asText())).isEqualTo(last.plusSeconds(1));
    assertThat(pulse.get("enqueued").asLong()).isGreaterThanOrEqualTo(1);
    assertThat(pulse.get("kind").asText()).isEqualTo("tick");

    Cli.Result table = Cli.run(on(db, "schedules"));
    assertThat(table.exitCode()).as(table.toString()).isZero();
    assertThat(table.out()).contains("NEXT_SLOT", "nightly", "pulse", last.toString());
  }

  @Test
  void saysSoWhenThereAreNone(TestDatabase db) {
    Cli.Result r = Cli.run(on(db, "schedules"));
    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).contains("no schedules");
  }
}
