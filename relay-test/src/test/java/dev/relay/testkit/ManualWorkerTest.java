package dev.relay.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Claim;
import dev.relay.HeldClaim;
import dev.relay.InvalidConfigurationException;
import dev.relay.ManualClaims;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.TransactionRequiredException;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The manual worker and the claims API under it, against real PostgreSQL. */
@RelayDatabaseTest
class ManualWorkerTest {
  private static final String KIND = "order_received";

  private TestDatabase db;
  private Outbox outbox;

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
    this.outbox = Outbox.builder().schema(db.schema()).build();
  }

  private void enqueue(Work work) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, work);
      c.commit();
    }
  }

  private ManualWorker.Builder worker(String id) {
    return ManualWorker.builder(db.dataSource()).schema(db.schema()).workerId(id);
  }

  private String column(String column, String workId) throws Exception {
    return db.queryString(
        "SELECT "
            + column
            + "::text FROM "
            + db.schema()
            + ".work WHERE work_id = '"
            + workId
            + "'");
  }

  @Nested
  class Running {
    @Test
    void runNextRecordsTheHandlersDoneAsTheRuntimeDoes() throws Exception {
      enqueue(Work.of("w1", KIND, "{\"order\": 103}"));
      ManualWorker worker =
          worker("manual-a").handle(KIND, claim -> Outcome.done("email-" + claim.workId())).build();

      ManualWorker.Attempt attempt = worker.runNext(KIND).orElseThrow();

      assertThat(attempt.claim().payload()).isEqualTo("{\"order\": 103}");
      assertThat(attempt.claim().generation()).isEqualTo(1);
      assertThat(attempt.outcome()).isEqualTo(Outcome.done("email-w1"));
      assertThat(attempt.write().applied()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("done");
      assertThat(column("outcome", "w1")).isEqualTo("delivered");
      assertThat(column("receiver_ref", "w1")).isEqualTo("email-w1");
      assertThat(column("claimed_by", "w1")).isNull();
    }

    @Test
    void runNextFindsNothingWhenNoWorkIsEligible() throws Exception {
      enqueue(Work.of("later", KIND, "{}").delay(Duration.ofHours(1)));
      ManualWorker worker = worker("manual-a").handle(KIND, c -> Outcome.done()).build();

      assertThat(worker.runNext(KIND)).isEmpty();
      assertThat(column("state", "later")).isEqualTo("ready");
    }

    @Test
    void aRetryWithoutDelayIsClaimableAgainAtOnceUnderTheNextGeneration() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      AtomicInteger calls = new AtomicInteger();
      ManualWorker worker =
          worker("manual-a")
              .handle(
                  KIND,
                  c ->
                      calls.incrementAndGet() == 1
                          ? Outcome.retry("receiver busy", Outcome.Effect.NOT_DELIVERED)
                          : Outcome.done())
              .build();

      ManualWorker.Attempt first = worker.runNext(KIND).orElseThrow();
      assertThat(first.write().applied()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("ready");
      assertThat(column("last_error", "w1")).isEqualTo("receiver busy");

      ManualWorker.Attempt second = worker.runNext(KIND).orElseThrow();
      assertThat(second.claim().generation()).isEqualTo(2);
      assertThat(second.claim().attempt()).isEqualTo(2);
      assertThat(column("state", "w1")).isEqualTo("done");
      assertThat(
              db.queryString(
                  "SELECT ending || '/' || outcome FROM "
                      + db.schema()
                      + ".attempt"
                      + " WHERE work_id = 'w1' AND generation = 1"))
          .isEqualTo("retry/not_delivered");
    }

    @Test
    void aHandlerThatThrowsGetsARetryWithItsEffectUnknown() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker worker =
          worker("manual-a")
              .handle(
                  KIND,
                  c -> {
                    throw new IllegalStateException("socket reset after sending");
                  })
              .build();

      ManualWorker.Attempt attempt = worker.runNext(KIND).orElseThrow();

      assertThat(attempt.outcome()).isNull();
      assertThat(attempt.error()).hasMessage("socket reset after sending");
      assertThat(attempt.write().applied()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("ready");
      assertThat(column("outcome", "w1")).isEqualTo("unknown");
      assertThat(column("last_error", "w1")).contains("socket reset after sending");
    }

    @Test
    void aRetryPastTheAttemptCapIsRecordedAsFailed() throws Exception {
      enqueue(Work.of("w1", KIND, "{}").maxAttempts(1));
      ManualWorker worker = worker("manual-a").handle(KIND, c -> Outcome.retry("again")).build();

      worker.runNext(KIND).orElseThrow();

      assertThat(column("state", "w1")).isEqualTo("failed");
      assertThat(worker.claim(List.of(KIND), 10).claimed()).isEmpty();
    }

    @Test
    void theAttemptCapRetiresWorkAtClaimTime() throws Exception {
      enqueue(Work.of("w1", KIND, "{}").maxAttempts(1));
      ManualWorker worker = worker("manual-a").handle(KIND, c -> Outcome.retry("again")).build();
      // A worker that dies mid-attempt records nothing: its one attempt is spent only by the claim.
      HeldClaim stalled = worker.claimNext(KIND).orElseThrow();
      assertThat(worker.expireLease(stalled).applied()).isTrue();

      ManualClaims.Batch batch = worker.claim(List.of(KIND), 10);

      assertThat(batch.claimed()).isEmpty();
      assertThat(batch.retired())
          .singleElement()
          .satisfies(
              r -> {
                assertThat(r.workId()).isEqualTo("w1");
                assertThat(r.state()).isEqualTo("failed");
                assertThat(r.reason()).isEqualTo("attempts_exhausted");
              });
    }

    @Test
    void callRunsTheHandlerAndRecordsNothing() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker worker = worker("manual-a").handle(KIND, c -> Outcome.done("sent")).build();
      HeldClaim held = worker.claimNext(KIND).orElseThrow();

      ManualWorker.Attempt called = worker.call(held);

      assertThat(called.outcome()).isEqualTo(Outcome.done("sent"));
      assertThat(called.write()).isNull();
      assertThat(column("state", "w1")).isEqualTo("running");
      assertThat(column("claimed_by", "w1")).isEqualTo("manual-a");
    }

    @Test
    void aKindWithoutAHandlerIsNamedInTheError() throws Exception {
      enqueue(Work.of("w1", "other_kind", "{}"));
      ManualWorker worker = worker("manual-a").handle(KIND, c -> Outcome.done()).build();
      HeldClaim held = worker.claimNext("other_kind").orElseThrow();

      assertThatThrownBy(() -> worker.run(held))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("no handler for kind other_kind");
    }
  }

  @Nested
  class Stalling {
    @Test
    void aStalledClaimWhoseLeaseEndsIsTakenOverAndItsLateCompletionRefused() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker a = worker("worker-a").build();
      ManualWorker b = worker("worker-b").build();
      HeldClaim stalled = a.claimNext(KIND).orElseThrow();
      AtomicInteger stopped = new AtomicInteger();
      stalled.onStop(stopped::incrementAndGet);
      // While the lease is live nobody else can claim the work.
      assertThat(b.claimNext(KIND)).isEmpty();

      assertThat(a.expireLease(stalled).applied()).isTrue();
      HeldClaim takeover = b.claimNext(KIND).orElseThrow();
      ManualClaims.Write late = a.complete(stalled);
      ManualClaims.Write current = b.complete(takeover);

      assertThat(stalled.stopReason()).isEqualTo(Claim.StopReason.LEASE_LOST);
      assertThat(stopped).hasValue(1);
      assertThat(takeover.generation()).isEqualTo(stalled.generation() + 1);
      assertThat(takeover.reclaimed()).isTrue();
      assertThat(takeover.previousOwner()).isEqualTo("worker-a");
      assertThat(late.stale()).isTrue();
      assertThat(current.applied()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("done");
      assertThat(
              db.queryString(
                  "SELECT string_agg(ending || ':' || generation, ',' ORDER BY id) FROM "
                      + db.schema()
                      + ".attempt WHERE work_id = 'w1'"))
          .isEqualTo("lease_expired:1,stale_write:1");
    }

    @Test
    void expiringTheLeaseOfAStaleClaimChangesNothing() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker a = worker("worker-a").build();
      HeldClaim held = a.claimNext(KIND).orElseThrow();
      a.complete(held);

      assertThat(a.expireLease(held).stale()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("done");
    }

    @Test
    void renewalExtendsTheLeaseAndReportsACancelRequest() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker a = worker("worker-a").lease(Duration.ofMinutes(5)).build();
      HeldClaim held = a.claimNext(KIND).orElseThrow();
      AtomicInteger stopped = new AtomicInteger();
      held.onStop(stopped::incrementAndGet);

      ManualClaims.Write quiet = a.renew(held);
      Admin.create(db.dataSource(), db.schema()).cancel("w1", "test", "no longer wanted");
      ManualClaims.Write asked = a.renew(held);

      assertThat(quiet.applied()).isTrue();
      assertThat(quiet.cancelRequested()).isFalse();
      assertThat(asked.cancelRequested()).isTrue();
      assertThat(held.isCancelRequested()).isTrue();
      assertThat(held.stopReason()).isEqualTo(Claim.StopReason.CANCEL_REQUESTED);
      assertThat(held.leaseUntil()).isEqualTo(asked.leaseUntil());
      assertThat(held.leaseRemaining()).isPositive();
      assertThat(stopped).hasValue(1);
      assertThat(a.settle(held, Outcome.cancel("asked to")).applied()).isTrue();
      assertThat(column("state", "w1")).isEqualTo("cancelled");
    }

    @Test
    void releaseGivesTheWorkBackWithoutCountingTheAttempt() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualWorker a = worker("worker-a").build();
      HeldClaim held = a.claimNext(KIND).orElseThrow();

      assertThat(a.release(held).applied()).isTrue();

      assertThat(column("state", "w1")).isEqualTo("ready");
      assertThat(column("attempts", "w1")).isEqualTo("0");
      assertThat(worker("worker-b").build().claimNext(KIND)).isPresent();
    }
  }

  @Nested
  class LowLevel {
    @Test
    void aConnectionInATransactionIsRefusedBeforeAnythingIsClaimed() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      ManualClaims claims = ManualClaims.forSchema(db.schema());
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(
                () -> claims.claimNext(c, "worker-a", "default", KIND, Duration.ofSeconds(30)))
            .isInstanceOf(TransactionRequiredException.class);
        c.rollback();
      }
      assertThat(column("state", "w1")).isEqualTo("ready");
    }

    @Test
    void recoverFindsTheLiveClaimsOfAWorker() throws Exception {
      enqueue(Work.of("w1", KIND, "{}"));
      enqueue(Work.of("w2", KIND, "{}"));
      ManualClaims claims = ManualClaims.forSchema(db.schema());
      try (Connection c = db.connection()) {
        claims.claim(c, "worker-a", List.of("default"), List.of(KIND), 2, Duration.ofMinutes(1));

        List<HeldClaim> recovered = claims.recover(c, "worker-a");

        assertThat(recovered).extracting(HeldClaim::workId).containsExactly("w1", "w2");
        assertThat(recovered.get(0).leaseRemaining()).isZero();
        assertThat(claims.renew(c, recovered.get(0), Duration.ofMinutes(1)).applied()).isTrue();
        assertThat(claims.recover(c, "worker-b")).isEmpty();
      }
    }

    @Test
    void badSettingsAreRefusedWithTheirNames() {
      assertThatThrownBy(() -> ManualClaims.forSchema("Not-A-Schema"))
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> worker("").build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId");
      assertThatThrownBy(() -> worker("a").lease(Duration.ZERO).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease");
      assertThatThrownBy(() -> worker("a").lease(Duration.ofDays(2)).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("at most PT24H");
      assertThatThrownBy(
              () -> worker("a").handle(KIND, c -> Outcome.done()).handle(KIND, c -> Outcome.done()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(KIND);
    }
  }

  @Nested
  class Enqueued {
    @Test
    void workEnqueuedInAnOpenTransactionIsSeenByItAndByNoOneElse() throws Exception {
      EnqueuedWork enqueued = EnqueuedWork.in(db.schema());
      try (Connection tx = db.connection();
          Connection other = db.connection()) {
        tx.setAutoCommit(false);
        outbox.enqueue(tx, Work.of("ack-103", KIND, "{\"order\": 103}").orderingKey("order-103"));

        EnqueuedWork.Row row = enqueued.requireEnqueued(tx, KIND);
        assertThat(row.workId()).isEqualTo("ack-103");
        assertThat(row.state()).isEqualTo("ready");
        assertThat(row.payload()).isEqualTo("{\"order\": 103}");
        assertThat(row.orderingKey()).isEqualTo("order-103");
        assertThat(row.sequence()).isNotNull();
        enqueued.requireNotEnqueued(other, KIND);
        assertThatThrownBy(() -> enqueued.requireNotEnqueued(tx, KIND))
            .isInstanceOf(AssertionError.class)
            .hasMessageContaining("found 1: [ack-103]");

        tx.rollback();
        enqueued.requireNotEnqueued(tx, KIND);
      }
    }

    @Test
    void requireEnqueuedCountsExactly() throws Exception {
      enqueue(Work.of("a", KIND, "{}"));
      enqueue(Work.of("b", KIND, "{}"));
      EnqueuedWork enqueued = EnqueuedWork.in(db.schema());
      try (Connection c = db.connection()) {
        assertThat(enqueued.requireEnqueued(c, KIND, 2))
            .extracting(EnqueuedWork.Row::workId)
            .containsExactly("a", "b");
        assertThatThrownBy(() -> enqueued.requireEnqueued(c, KIND))
            .isInstanceOf(AssertionError.class)
            .hasMessageContaining("expected 1 enqueued item(s) of kind " + KIND + ", found 2");
        assertThat(enqueued.enqueued(c, "nothing")).isEmpty();
      }
    }

    @Test
    void workAWorkerCompletedIsStillFoundAsDone() throws Exception {
      enqueue(Work.of("ack-104", KIND, "{\"order\": 104}"));
      worker("manual-a").handle(KIND, claim -> Outcome.done()).build().runNext(KIND);
      // The completion moved the row out of the work table into the history table.
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work_history")).isEqualTo(1);
      try (Connection c = db.connection()) {
        EnqueuedWork.Row row = EnqueuedWork.in(db.schema()).requireEnqueued(c, KIND);
        assertThat(row.workId()).isEqualTo("ack-104");
        assertThat(row.state()).isEqualTo("done");
        assertThat(row.payload()).isEqualTo("{\"order\": 104}");
      }
    }
  }

  @Test
  void theKitUsesOnlyPublicApi() {
    // ManualWorker exposes the claims API it is built on, for steps it does not wrap.
    ManualWorker worker = worker("a").build();
    assertThat(worker.claims().schema()).isEqualTo(db.schema());
    assertThat(worker.workerId()).isEqualTo("a");
    Optional<HeldClaim> none = worker.claimNext(KIND);
    assertThat(none).isEmpty();
  }
}
