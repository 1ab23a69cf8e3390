package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.spring.RelayHandler;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code relay.schedules.*}: a schedule from the properties enqueues work that its handler runs.
 */
@RelayDatabaseTest
class SchedulesTest {
  /** The payload of a slot's work. */
  record Slot(String schedule, String slot) {}

  private static ApplicationContextRunner on(TestDatabase db) {
    return Contexts.on(db)
        .withConfiguration(AutoConfigurations.of(RelayScheduleAutoConfiguration.class));
  }

  static class Pulse {
    final List<String> ran = new CopyOnWriteArrayList<>();

    @RelayHandler(kind = "pulse")
    Outcome on(Slot slot, Claim claim) {
      ran.add(claim.workId());
      assertThat(claim.workId()).isEqualTo(slot.schedule() + "@" + slot.slot());
      return Outcome.done();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Handlers {
    @Bean
    Pulse pulse() {
      return new Pulse();
    }
  }

  @Test
  void aOneSecondScheduleEnqueuesAndItsHandlerRuns(TestDatabase db) {
    on(db)
        .withUserConfiguration(Handlers.class)
        .withPropertyValues(
            "relay.schedules.heartbeat.kind=pulse",
            "relay.schedules.heartbeat.every=1s",
            "relay.schedules.heartbeat.missed=skip",
            "relay.scheduler-poll-interval=200ms")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              Pulse pulse = context.getBean(Pulse.class);
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(() -> assertThat(pulse.ran).hasSizeGreaterThanOrEqualTo(2));
              assertThat(pulse.ran).allMatch(id -> id.startsWith("heartbeat@"));
              assertThat(pulse.ran).doesNotHaveDuplicates();
            });
  }

  @Test
  void noSchedulesNoScheduler(TestDatabase db) {
    on(db).run(context -> assertThat(context.getBean(RelaySchedules.class).scheduler()).isEmpty());
  }

  @Test
  void anInvalidScheduleFailsStartUpNamingItsProperty(TestDatabase db) {
    String[][] cases = {
      {"relay.schedules.nightly.cron=0 99 2 * * *", "relay.schedules.nightly.cron"},
      {"relay.schedules.nightly.zone=Mars/Olympus", "relay.schedules.nightly.zone"},
      {"relay.schedules.nightly.missed=sometimes", "relay.schedules.nightly.missed"},
      {"relay.schedules.nightly.every=1h", "relay.schedules.nightly.cron"},
      {"relay.schedules.nightly.kind=nightly report", "relay.schedules.nightly.kind"},
    };
    for (String[] c : cases) {
      on(db)
          .withPropertyValues(
              "relay.schedules.nightly.kind=report",
              "relay.schedules.nightly.cron=30 2 * * *",
              "relay.schedules.nightly.zone=Europe/Berlin",
              c[0])
          .run(
              context ->
                  assertThat(context).as(c[0]).getFailure().rootCause().hasMessageContaining(c[1]));
    }
    on(db)
        .withPropertyValues("relay.schedules.pulse.kind=pulse", "relay.schedules.pulse.every=0s")
        .run(
            context ->
                assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("relay.schedules.pulse.every"));
    on(db)
        .withPropertyValues(
            "relay.schedules.pulse.kind=pulse",
            "relay.schedules.pulse.every=1s",
            "relay.scheduler-poll-interval=2h")
        .run(
            context ->
                assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("relay.scheduler-poll-interval"));
  }
}
