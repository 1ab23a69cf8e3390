package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.admin.Admin;
import dev.relay.admin.RedriveRequest;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@link Outcome#snooze}: tried again later without spending an attempt, counted per item against
 * the kind's {@link KindPolicy#maxSnoozes()}; at the cap an ordinary retry.
 */
@RelayDatabaseTest
class RelaySnoozeTest {
  private static final KindPolicy FAST =
      KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(20), Duration.ofMillis(50));
  private static final Duration SOON = Duration.ofMillis(20);

  @Test
  void aSnoozeGivesItsAttemptBackSoEvenASingleAttemptKindRunsAfterSnoozing(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .listener(events)
              .handle(
                  "mail",
                  FAST.withMaxAttempts(1),
                  claim ->
                      claim.generation() < 3
                          ? Outcome.retryAfter(SOON, "HTTP 429: quota")
                          : Outcome.done()));
      f.enqueue(Work.of("w", "mail", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("attempts", "1")
          .containsEntry("snoozes", "2")
          .containsEntry("claim_generation", "3")
          .containsEntry("outcome", "delivered");
      assertThat(f.attempts("w"))
          .containsExactly("1 snoozed snoozed not_delivered", "2 snoozed snoozed not_delivered");
      assertThat(f.attempts("w", "TRUE", "error")).containsOnly("HTTP 429: quota");
      assertThat(events.count("snoozed w")).isEqualTo(2);
      assertThat(events.count("retried w")).isZero();
    }
  }

  @Test
  void pastTheKindsSnoozeCapASnoozeIsAnOrdinaryRetryUntilTheAttemptsRunOut(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .listener(events)
              .handle(
                  "busy",
                  FAST.withMaxSnoozes(2).withMaxAttempts(2),
                  claim -> Outcome.snooze(SOON)));
      f.enqueue(Work.of("w", "busy", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
      assertThat(f.attempts("w"))
          .containsExactly(
              "1 snoozed snoozed not_delivered",
              "2 snoozed snoozed not_delivered",
              "3 retry snooze_limit not_delivered",
              "4 failed attempts_exhausted not_delivered");
      assertThat(f.row("w"))
          .containsEntry("attempts", "2")
          .containsEntry("snoozes", "2")
          .containsEntry("last_error_kind", "attempts_exhausted")
          .containsEntry("outcome", "not_delivered");
      assertThat(f.column("w", "last_error"))
          .isEqualTo("all 2 attempts used; last error (snoozed): snoozed");
      assertThat(f.attempts("w", "generation = 3", "error"))
          .containsExactly("snoozed 2 times, the kind's cap; counted as a retry: snoozed");
      // Reported as what the store recorded, not as what the handler asked. Events follow the
      // commit that made the row failed, so the last one may arrive after the state is visible.
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> events.count("failed w attempts_exhausted") == 1);
      assertThat(events.count("snoozed w")).isEqualTo(2);
      assertThat(events.count("retried w snooze_limit")).isEqualTo(1);
      assertThat(events.count("failed w attempts_exhausted")).isEqualTo(1);

      // A redrive starts a new budget of snoozes as well as attempts.
      Admin.create(db.dataSource(), db.schema())
          .redrive("w", RedriveRequest.of("olga", "quota raised"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("snoozed w") == 4);
    }
  }

  @Test
  void theSnoozeDelayIsMeasuredOnTheDatabaseClockAndTheKindsCapIsRegistered(TestDatabase db)
      throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .handle(
                  "later", FAST.withMaxSnoozes(7), claim -> Outcome.snooze(Duration.ofHours(1))));
      f.enqueue(Work.of("w", "later", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> "1".equals(f.column("w", "snoozes")));
      assertThat(f.row("w")).containsEntry("state", "ready").containsEntry("attempts", "0");
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.work WHERE work_id = 'w'"
                      + " AND available_at > clock_timestamp() + interval '59 minutes'"))
          .isEqualTo(1);
      assertThat(db.queryLong("SELECT max_snoozes FROM {schema}.kind WHERE kind = 'later'"))
          .isEqualTo(7);
    }
  }

  @Test
  void aSnoozeThatWouldStartAfterTheRetryWindowFailsTheWork(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .handle(
                  "slowly",
                  FAST.withMaxElapsed(Duration.ofSeconds(2)),
                  claim -> Outcome.snooze(Duration.ofMinutes(5))));
      f.enqueue(Work.of("w", "slowly", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("last_error_kind", "retry_window_exhausted")
          .containsEntry("outcome", "not_delivered")
          .containsEntry("snoozes", "0");
    }
  }

  @Test
  void aNegativeSnoozeOrSnoozeCapIsRefusedNamingIt(TestDatabase db) {
    assertThatThrownBy(() -> Outcome.snooze(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snooze delay is negative");
    assertThatThrownBy(
            () ->
                Relay.builder(db.dataSource())
                    .schema(db.schema())
                    .handle("k", KindPolicy.DEFAULT.withMaxSnoozes(-1), claim -> Outcome.done())
                    .build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("kind k: maxSnoozes");
  }
}
