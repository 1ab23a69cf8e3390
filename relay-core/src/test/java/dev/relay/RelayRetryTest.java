package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class RelayRetryTest {
  private static final KindPolicy FAST =
      KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));

  @Nested
  class Retries {
    @Test
    void throwingHandlerIsRetriedWithCappedJitteredBackoffThenFailsWithItsHistory(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        RelayFixture.Recorder events = new RelayFixture.Recorder();
        f.start(
            f.builder()
                .listener(events)
                .handle(
                    "flaky",
                    FAST.withMaxAttempts(5),
                    claim -> {
                      throw new IllegalStateException(
                          "provider said 503 on try " + claim.attempt());
                    }));
        f.enqueue(Work.of("w", "flaky", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("attempts", "5")
            .containsEntry("last_error_kind", "attempts_exhausted")
            .containsEntry("outcome", "unknown");
        assertThat(f.column("w", "last_error")).contains("provider said 503 on try 5");
        assertThat(f.attempts("w"))
            .containsExactly(
                "1 retry exception unknown",
                "2 retry exception unknown",
                "3 retry exception unknown",
                "4 retry exception unknown",
                "5 failed attempts_exhausted unknown");
        List<Duration> delays = events.retryDelays.get("w");
        assertThat(delays).hasSize(4);
        for (int i = 0; i < delays.size(); i++) {
          Duration ceiling = Duration.ofMillis(Math.min(200, 50L << i));
          assertThat(delays.get(i)).isBetween(Duration.ZERO, ceiling);
        }
      }
    }

    @Test
    void workCapStopsRetriesBeforeTheKindsCap(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        f.start(
            f.builder()
                .handle(
                    "flaky", FAST, claim -> Outcome.retry("busy", Outcome.Effect.NOT_DELIVERED)));
        f.enqueue(Work.of("w", "flaky", "{}").maxAttempts(2));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("attempts", "2")
            .containsEntry("outcome", "not_delivered");
        assertThat(f.attempts("w"))
            .containsExactly(
                "1 retry retry not_delivered", "2 failed attempts_exhausted not_delivered");
      }
    }

    @Test
    void retryThatWouldStartAfterTheRetryWindowFailsInstead(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        f.start(
            f.builder()
                .handle(
                    "slowly",
                    FAST.withMaxElapsed(Duration.ofSeconds(2)),
                    claim -> Outcome.retry("come back later").after(Duration.ofMinutes(5))));
        f.enqueue(Work.of("w", "slowly", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("attempts", "1")
            .containsEntry("last_error_kind", "retry_window_exhausted");
      }
    }

    @Test
    void explicitRetryDelayIsUsedAndPermanentFailureIsKeptWithItsEvidence(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        RelayFixture.Recorder events = new RelayFixture.Recorder();
        f.start(
            f.builder()
                .listener(events)
                .handle(
                    "mail",
                    FAST,
                    claim ->
                        claim.attempt() == 1
                            // A 429 is a refusal: known not delivered. (Had this attempt's
                            // effect been unknown, the row would keep "unknown" for good.)
                            ? Outcome.retry("rate limited", Outcome.Effect.NOT_DELIVERED)
                                .after(Duration.ofMillis(300))
                            : Outcome.fail(
                                "mailbox does not exist", Outcome.Effect.NOT_DELIVERED)));
        f.enqueue(Work.of("w", "mail", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(events.retryDelays.get("w")).containsExactly(Duration.ofMillis(300));
        assertThat(f.row("w"))
            .containsEntry("last_error_kind", "permanent")
            .containsEntry("last_error", "mailbox does not exist")
            .containsEntry("outcome", "not_delivered");
      }
    }
  }

  @Nested
  class UnknownOutcomes {
    @Test
    void parkPolicyFailsAfterOneAttemptWithOutcomeUnknown(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.start(
            f.builder()
                .handle(
                    "sms",
                    FAST.withUnknownOutcome(UnknownOutcomePolicy.park()),
                    claim -> {
                      runs.incrementAndGet();
                      throw new java.net.SocketTimeoutException("read timed out");
                    }));
        f.enqueue(Work.of("w", "sms", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("attempts", "1")
            .containsEntry("outcome", "unknown")
            .containsEntry("last_error_kind", "exception");
        assertThat(f.column("w", "last_error")).contains("read timed out").contains("parked");
        assertThat(runs).hasValue(1);
      }
    }

    @Test
    void parkPolicyAlsoParksAReturnedRetryWhoseEffectIsUnknown(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.start(
            f.builder()
                .handle(
                    "sms",
                    FAST.withUnknownOutcome(UnknownOutcomePolicy.park()),
                    claim -> {
                      runs.incrementAndGet();
                      return Outcome.retry("connection reset after sending");
                    }));
        f.enqueue(Work.of("w", "sms", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("attempts", "1")
            .containsEntry("outcome", "unknown")
            .containsEntry("last_error_kind", "retry");
        assertThat(f.column("w", "last_error"))
            .contains("connection reset after sending")
            .contains("parked");
        assertThat(runs).hasValue(1);
      }
    }

    @Test
    void parkPolicyStillRetriesWhatTheHandlerKnowsWasNotDelivered(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.start(
            f.builder()
                .handle(
                    "sms",
                    FAST.withUnknownOutcome(UnknownOutcomePolicy.park()),
                    claim ->
                        runs.incrementAndGet() == 1
                            ? Outcome.retry("connection refused", Outcome.Effect.NOT_DELIVERED)
                            : Outcome.done("sms-1")));
        f.enqueue(Work.of("w", "sms", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        assertThat(f.row("w")).containsEntry("attempts", "2").containsEntry("outcome", "delivered");
        assertThat(runs).hasValue(2);
      }
    }

    @Test
    void reconcileAcceptedRecordsDoneWithoutRunningAgain(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.start(
            f.builder()
                .handle(
                    "charge",
                    FAST.withUnknownOutcome(
                        UnknownOutcomePolicy.reconcile(
                            claim -> Reconciliation.accepted("ch_" + claim.workId()))),
                    claim -> {
                      runs.incrementAndGet();
                      throw new java.io.IOException("connection reset after sending");
                    }));
        f.enqueue(Work.of("w", "charge", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("receiver_ref", "ch_w")
            .containsEntry("milestone", "accepted")
            .containsEntry("attempts", "1");
        assertThat(runs).hasValue(1);
      }
    }

    @Test
    void reconcileNotAcceptedRetriesSafely(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        f.start(
            f.builder()
                .handle(
                    "charge",
                    FAST.withUnknownOutcome(
                        UnknownOutcomePolicy.reconcile(claim -> Reconciliation.notAccepted())),
                    claim -> {
                      if (claim.attempt() == 1) {
                        throw new java.io.IOException("connection refused");
                      }
                      return RelayFixture.done(claim);
                    }));
        f.enqueue(Work.of("w", "charge", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        assertThat(f.attempts("w")).containsExactly("1 retry exception not_delivered");
      }
    }

    @Test
    void reconcileThatCannotTellParksTheWork(TestDatabase db) {
      try (RelayFixture f = new RelayFixture(db)) {
        f.start(
            f.builder()
                .handle(
                    "charge",
                    FAST.withUnknownOutcome(
                        UnknownOutcomePolicy.reconcile(
                            claim -> {
                              throw new IllegalStateException("status API down");
                            })),
                    claim -> {
                      throw new java.io.IOException("timeout");
                    }));
        f.enqueue(Work.of("w", "charge", "{}"));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w")).containsEntry("outcome", "unknown").containsEntry("attempts", "1");
      }
    }

    @Test
    void workReclaimedAfterAnExpiredLeaseIsReconciledBeforeRunning(TestDatabase db)
        throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.enqueue(Work.of("w", "charge", "{}"));
        expireAsIfAWorkerDied(db, "w");
        f.start(
            f.builder()
                .handle(
                    "charge",
                    FAST.withUnknownOutcome(
                        UnknownOutcomePolicy.reconcile(claim -> Reconciliation.accepted("ch_1"))),
                    claim -> {
                      runs.incrementAndGet();
                      return RelayFixture.done(claim);
                    }));

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("receiver_ref", "ch_1")
            .containsEntry("claim_generation", "2");
        assertThat(runs).hasValue(0);
        assertThat(f.attempts("w")).containsExactly("1 lease_expired lease_expired unknown");
      }
    }

    @Test
    void workReclaimedAfterAnExpiredLeaseIsParkedUnderThePark(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        AtomicInteger runs = new AtomicInteger();
        f.enqueue(Work.of("w", "sms", "{}"));
        expireAsIfAWorkerDied(db, "w");
        f.start(
            f.builder()
                .handle(
                    "sms",
                    FAST.withUnknownOutcome(UnknownOutcomePolicy.park()),
                    claim -> {
                      runs.incrementAndGet();
                      return RelayFixture.done(claim);
                    }));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        assertThat(f.row("w"))
            .containsEntry("outcome", "unknown")
            .containsEntry("last_error_kind", "lease_expired");
        assertThat(runs).hasValue(0);
      }
    }

    @Test
    void retryPolicyRetriesAfterAnExpiredLease(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("w", "mail", "{}"));
        expireAsIfAWorkerDied(db, "w");
        f.start(f.builder().handle("mail", FAST, RelayFixture::done));

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        assertThat(f.column("w", "claim_generation")).isEqualTo("2");
      }
    }

    @Test
    void aTakeoverKeepsTheRowUnknownThoughTheNextAttemptDeliveredNothing(TestDatabase db)
        throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("w", "mail", "{}"));
        expireAsIfAWorkerDied(db, "w");
        f.start(
            f.builder()
                .handle(
                    "mail",
                    FAST,
                    claim -> Outcome.fail("address refused", Outcome.Effect.NOT_DELIVERED)));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        // the dead worker's attempt may have reached the receiver: the row says so
        assertThat(f.row("w")).containsEntry("outcome", "unknown");
        assertThat(f.attempts("w"))
            .containsExactly(
                "1 lease_expired lease_expired unknown", "2 failed permanent not_delivered");
      }
    }

    @Test
    void aReconcilersNotAcceptedForATakeoverIsTheEvidence(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("w", "charge", "{}"));
        expireAsIfAWorkerDied(db, "w");
        f.start(
            f.builder()
                .handle(
                    "charge",
                    FAST.withUnknownOutcome(
                        UnknownOutcomePolicy.reconcile(claim -> Reconciliation.notAccepted())),
                    claim -> Outcome.fail("card refused", Outcome.Effect.NOT_DELIVERED)));

        await().atMost(RelayFixture.PATIENCE).until(() -> "failed".equals(f.state("w")));
        // the receiver said it never had the work: nothing was delivered by either attempt
        assertThat(f.row("w")).containsEntry("outcome", "not_delivered");
      }
    }

    /** Makes the row look claimed by a worker that died: running, lease already expired. */
    private void expireAsIfAWorkerDied(TestDatabase db, String workId) throws Exception {
      db.execute(
          "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'dead-worker',"
              + " claim_generation = 1, attempts = 1, claimed_at = clock_timestamp(),"
              + " first_attempt_at = clock_timestamp(),"
              + " lease_until = clock_timestamp() - interval '1 second' WHERE work_id = '"
              + workId
              + "'");
    }
  }
}
