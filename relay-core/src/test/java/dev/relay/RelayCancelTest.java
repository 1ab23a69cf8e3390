package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class RelayCancelTest {

  @Test
  void cancelOfReadyWorkCancelsItAtOnceAndEveryCallIsAudited(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      // Not started: cancel is an admin operation and needs no running worker.
      Relay relay = f.builder().handle("k", RelayFixture::done).build();
      f.enqueue(Work.of("w", "k", "{}").delay(Duration.ofHours(1)));

      assertThat(relay.cancel("w", "mina@ops", "customer withdrew the order"))
          .isEqualTo(new CancelResult("w", CancelResult.Status.CANCELLED, "ready"));
      assertThat(f.row("w"))
          .containsEntry("state", "cancelled")
          .containsEntry("outcome", "not_delivered")
          .containsEntry("last_error_kind", "cancelled")
          .containsEntry("last_error", "cancelled by mina@ops: customer withdrew the order");
      assertThat(relay.cancel("w", "mina@ops", "again").status())
          .isEqualTo(CancelResult.Status.ALREADY_FINISHED);
      assertThat(relay.cancel("nope", "mina@ops", "typo").status())
          .isEqualTo(CancelResult.Status.NOT_FOUND);
      assertThat(
              db.queryString(
                  "SELECT string_agg(concat_ws(' ', work_id, actor, from_state, result), '; '"
                      + " ORDER BY id) FROM {schema}.cancel_audit"))
          .isEqualTo(
              "w mina@ops ready cancelled; w mina@ops cancelled already_finished;"
                  + " nope mina@ops not_found");
      assertThatThrownBy(() -> relay.cancel("w", " ", "why"))
          .isInstanceOf(InvalidWorkException.class)
          .hasMessageContaining("actor");
    }
  }

  @Test
  void cancelOfRunningWorkReachesTheHandlerAtRenewalAndIsRecordedCancelled(TestDatabase db) {
    AtomicInteger runs = new AtomicInteger();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      Relay relay =
          f.start(
              f.builder()
                  .lease(Duration.ofSeconds(5))
                  .renewInterval(Duration.ofMillis(200))
                  .listener(events)
                  .handle(
                      "export",
                      (Claim claim) -> {
                        runs.incrementAndGet();
                        CountDownLatch stop = new CountDownLatch(1);
                        claim.onStop(stop::countDown);
                        stop.await(60, TimeUnit.SECONDS);
                        return claim.isCancelRequested()
                            ? Outcome.cancel("stopped on request", Outcome.Effect.NOT_DELIVERED)
                            : Outcome.done();
                      }));
      f.enqueue(Work.of("w", "export", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      CancelResult r = relay.cancel("w", "ops", "report no longer needed");

      assertThat(r.status()).isEqualTo(CancelResult.Status.CANCEL_REQUESTED);
      await().atMost(RelayFixture.PATIENCE).until(() -> "cancelled".equals(f.state("w")));
      assertThat(events.events).contains("cancelRequested w", "cancelled w");
      assertThat(f.row("w"))
          .containsEntry("outcome", "not_delivered")
          .containsEntry("last_error", "stopped on request");
      assertThat(f.column("w", "cancel_requested_at")).isNotNull();
      assertThat(f.attempts("w")).containsExactly("1 cancelled cancelled not_delivered");
      assertThat(runs).hasValue(1);
    }
  }

  @Test
  void doneAfterACancelRequestIsRecordedAsDoneBecauseTheEffectHappened(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      Relay relay =
          f.start(
              f.builder()
                  .lease(Duration.ofSeconds(5))
                  .renewInterval(Duration.ofMillis(200))
                  .listener(events)
                  .handle(
                      "mail",
                      (Claim claim) -> {
                        CountDownLatch stop = new CountDownLatch(1);
                        claim.onStop(stop::countDown);
                        stop.await(60, TimeUnit.SECONDS);
                        return Outcome.done("sent-before-the-cancel-arrived");
                      }));
      f.enqueue(Work.of("w", "mail", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      relay.cancel("w", "ops", "too late?");

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "sent-before-the-cancel-arrived")
          .containsEntry("outcome", "delivered");
      assertThat(f.column("w", "cancel_requested_at")).isNotNull();
    }
  }

  @Test
  void retryAfterACancelRequestEndsTheWorkCancelled(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      Relay relay =
          f.start(
              f.builder()
                  .lease(Duration.ofSeconds(5))
                  .renewInterval(Duration.ofMillis(200))
                  .listener(events)
                  .handle(
                      "sync",
                      (Claim claim) -> {
                        CountDownLatch stop = new CountDownLatch(1);
                        claim.onStop(stop::countDown);
                        stop.await(60, TimeUnit.SECONDS);
                        throw new java.io.IOException("aborted");
                      }));
      f.enqueue(Work.of("w", "sync", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      relay.cancel("w", "ops", "stop it");

      await().atMost(RelayFixture.PATIENCE).until(() -> "cancelled".equals(f.state("w")));
      assertThat(f.row("w")).containsEntry("outcome", "unknown").containsEntry("attempts", "1");
    }
  }

  @Test
  void workPastItsDeadlineIsNeverStartedAndFailsWithReasonDeadline(TestDatabase db) {
    AtomicInteger runs = new AtomicInteger();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .listener(events)
              .handle(
                  "promo",
                  claim -> {
                    runs.incrementAndGet();
                    return Outcome.done();
                  }));
      f.enqueue(
          Work.of("late", "promo", "{}").deadline(Instant.now().minus(Duration.ofMinutes(1))),
          Work.of("timely", "promo", "{}").deadline(Instant.now().plus(Duration.ofHours(1))));

      await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("late")));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("timely")));
      assertThat(f.row("late"))
          .containsEntry("last_error_kind", "deadline")
          .containsEntry("attempts", "0")
          .containsEntry("outcome", "not_delivered");
      assertThat(runs).hasValue(1);
      assertThat(events.events).contains("retired late failed deadline");
    }
  }

  /**
   * A claim waits in the buffer while the only slot is busy, and its work's deadline passes
   * meanwhile: it is never started, but released, and the next claim ends it as {@code deadline}.
   */
  @Test
  void workWhoseDeadlinePassesInTheBufferIsNeverStarted(TestDatabase db) throws Exception {
    CountDownLatch firstRuns = new CountDownLatch(1);
    CountDownLatch finishFirst = new CountDownLatch(1);
    AtomicInteger secondRuns = new AtomicInteger();
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(
          Work.of("first", "promo", "{}").priority(10),
          // long enough to be claimed into the buffer before it passes, on a loaded machine too
          Work.of("second", "promo", "{}").deadline(Instant.now().plus(Duration.ofSeconds(8))));
      f.start(
          f.builder()
              .concurrency(1)
              .handle(
                  "promo",
                  claim -> {
                    if (claim.workId().equals("first")) {
                      firstRuns.countDown();
                      finishFirst.await();
                    } else {
                      secondRuns.incrementAndGet();
                    }
                    return Outcome.done();
                  }));
      assertThat(firstRuns.await(RelayFixture.PATIENCE.toSeconds(), TimeUnit.SECONDS)).isTrue();
      // claimed into the buffer while the only slot runs "first"
      await().atMost(RelayFixture.PATIENCE).until(() -> "running".equals(f.state("second")));
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM {schema}.outbox WHERE work_id = 'second'"
                              + " AND deadline < clock_timestamp()")
                      == 1);
      finishFirst.countDown();

      await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("second")));
      assertThat(f.row("second"))
          .containsEntry("last_error_kind", "deadline")
          .containsEntry("attempts", "0")
          .containsEntry("outcome", "not_delivered");
      assertThat(secondRuns).hasValue(0);
      assertThat(f.state("first")).isEqualTo("done");
    }
  }
}
