package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.RelayException;
import dev.relay.RetryableException;
import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.Settlement.Evidence;
import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class GuardTest {
  private static final Duration LONG = Duration.ofMinutes(5);
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  private ClaimedWork claimOne(String worker, Duration lease) {
    List<ClaimedWork> claimed = f.claim(worker, 1, lease).claimed();
    assertThat(claimed).hasSize(1);
    return claimed.get(0);
  }

  private WriteResult settle(String worker, Settlement s) {
    return f.with(c -> f.store.settle(c, worker, List.of(s)).get(0));
  }

  private void awaitLeaseExpired(String workId) {
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> f.leaseExpired(workId));
  }

  @Nested
  class StaleWorkerAB {
    @Test
    void pausedWorkerAGeneration7IsRefusedEverywhereAfterBClaimsGeneration8() {
      f.enqueue(Work.of("order-103-ack", "k", "{\"order_id\":103}"));
      // Six earlier claims ended; the next one is generation 7, as in the story.
      Rows.update(f.ds, f.schema, "UPDATE {schema}.outbox SET claim_generation = 6");

      ClaimedWork a = claimOne("worker-a", Duration.ofMillis(500));
      assertThat(a.generation()).isEqualTo(7);
      awaitLeaseExpired("order-103-ack"); // A pauses past its lease
      ClaimedWork b = claimOne("worker-b", LONG);
      assertThat(b.generation()).isEqualTo(8);
      Map<String, Object> bRow = f.row("order-103-ack");

      ClaimRef a7 = a.ref();
      assertThat(settle("worker-a", new Settlement.Complete(a7, "msg-1", null, "accepted")).stale())
          .isTrue();
      assertThat(
              settle(
                      "worker-a",
                      new Settlement.Retry(a7, Duration.ZERO, "io", "boom", Evidence.UNKNOWN))
                  .stale())
          .isTrue();
      assertThat(
              settle("worker-a", new Settlement.Fail(a7, "permanent", "no", Evidence.UNKNOWN))
                  .stale())
          .isTrue();
      assertThat(settle("worker-a", new Settlement.Release(a7)).stale()).isTrue();
      assertThat(settle("worker-a", new Settlement.Snooze(a7, Duration.ZERO, "429")).stale())
          .isTrue();
      assertThat(settle("worker-a", new Settlement.Cancelled(a7, "stop", Evidence.UNKNOWN)).stale())
          .isTrue();
      List<WriteResult> renewals = f.with(c -> f.store.renew(c, "worker-a", List.of(a7), LONG));
      assertThat(renewals).singleElement().satisfies(r -> assertThat(r.stale()).isTrue());

      assertThat(f.row("order-103-ack")).isEqualTo(bRow);
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.attempt WHERE ending = 'stale_write'"
                      + " AND generation = 7 AND worker = 'worker-a'"))
          .isEqualTo(7);
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.attempt WHERE error_kind = 'stale_snooze'"
                      + " AND error LIKE 'refused snooze: stored state running, generation 8%'"))
          .isEqualTo(1);

      WriteResult done =
          settle(
              "worker-b",
              new Settlement.Complete(b.ref(), "msg-1", "{\"accepted\":true}", "accepted"));
      assertThat(done.applied()).isTrue();
      assertThat(f.row("order-103-ack"))
          .containsEntry("state", "done")
          .containsEntry("claim_generation", 8L)
          .containsEntry("claimed_by", null)
          .containsEntry("outcome", "delivered")
          .containsEntry("receiver_ref", "msg-1");
    }

    @Test
    void completionWithTheRightGenerationAfterExpiryWithoutReclaimIsRefused() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", Duration.ofMillis(300));
      awaitLeaseExpired("w");

      WriteResult r = settle("worker-a", new Settlement.Complete(a.ref(), null, null, null));

      assertThat(r.stale()).isTrue();
      assertThat(f.row("w")).containsEntry("state", "running").containsEntry("completed_at", null);
    }

    @Test
    void anotherWorkerCannotSettleAClaimItDoesNotOwn() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", LONG);

      assertThat(settle("worker-b", new Settlement.Complete(a.ref(), null, null, null)).stale())
          .isTrue();
      assertThat(f.row("w")).containsEntry("state", "running");
    }
  }

  @Nested
  class LockThenGuard {
    @Test
    void completionThatWaitsOnARowLockUntilItsLeaseExpiredIsRefused() throws Exception {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", Duration.ofSeconds(3));

      try (Connection holder = f.ds.getConnection();
          Connection aConnection = f.ds.getConnection()) {
        lockRow(holder, "w");
        int aPid = StoreFixture.pid(aConnection);
        CompletableFuture<WriteResult> completion =
            CompletableFuture.supplyAsync(
                () ->
                    f.store
                        .settle(
                            aConnection,
                            "worker-a",
                            List.of(new Settlement.Complete(a.ref(), null, null, null)))
                        .get(0));
        await().atMost(Duration.ofSeconds(60)).until(() -> f.waitingOnLock(aPid));
        awaitLeaseExpired("w");
        holder.commit(); // releases the lock without changing the row

        assertThat(completion.get(60, TimeUnit.SECONDS).stale()).isTrue();
      }
      assertThat(f.row("w"))
          .containsEntry("state", "running")
          .containsEntry("claimed_by", "worker-a");
    }

    /**
     * The counterexample: the article's completion as one UPDATE with the lease condition in its
     * WHERE. It evaluates the condition, then waits for the row lock; when the holder ends without
     * changing the row, PostgreSQL does not evaluate the condition again, so the expired claim
     * completes. This is why Relay locks first and checks the clock in a later statement.
     */
    @Test
    void singleStatementGuardAcceptsAnExpiredLeaseAfterALockWait() throws Exception {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", Duration.ofSeconds(5));

      try (Connection holder = f.ds.getConnection();
          Connection aConnection = f.ds.getConnection()) {
        lockRow(holder, "w");
        int aPid = StoreFixture.pid(aConnection);
        CompletableFuture<Integer> completion =
            CompletableFuture.supplyAsync(
                () ->
                    Rows.update(
                        aConnection,
                        f.schema,
                        """
                        UPDATE {schema}.outbox
                           SET state = 'done', completed_at = clock_timestamp(),
                               claimed_by = NULL, lease_until = NULL
                         WHERE work_id = ? AND state = 'running'
                           AND claimed_by = ? AND claim_generation = ?
                           AND lease_until > clock_timestamp()""",
                        "w",
                        "worker-a",
                        a.generation()));
        await().atMost(Duration.ofSeconds(60)).until(() -> f.waitingOnLock(aPid));
        // It reached the lock wait while the lease was still valid ...
        assertThat(f.leaseExpired("w"))
            .as("lease still valid when the UPDATE began waiting")
            .isFalse();
        awaitLeaseExpired("w");
        holder.commit();

        // ... and it completes although the lease expired during the wait.
        assertThat(completion.get(60, TimeUnit.SECONDS)).isEqualTo(1);
      }
      assertThat(f.row("w")).containsEntry("state", "done");
    }

    /**
     * The settlement sends its timeouts in the same round trip as the lock and the guarded write:
     * they must still bound the lock wait (55P03, retryable, nothing written), and stay local to
     * that transaction.
     */
    @Test
    void settlementSentInOneRoundTripStillEndsItsLockWaitAtTheLockTimeout() throws Exception {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", LONG);
      WorkStore shortLock =
          new WorkStore(
              SchemaName.of(f.schema),
              new Timeouts(Duration.ofSeconds(60), Duration.ofMillis(300), LONG));

      try (Connection holder = f.ds.getConnection();
          Connection aConnection = f.ds.getConnection()) {
        lockRow(holder, "w");
        assertThatThrownBy(
                () ->
                    shortLock.settle(
                        aConnection,
                        "worker-a",
                        List.of(new Settlement.Complete(a.ref(), null, null, null))))
            .isInstanceOf(RetryableException.class)
            .extracting(e -> ((RelayException) e).sqlState())
            .isEqualTo("55P03");
        assertThat(
                Rows.query(aConnection, f.schema, "SHOW lock_timeout").get(0).get("lock_timeout"))
            .as("the SET LOCAL ended with its transaction")
            .isNotEqualTo("300ms");
        holder.rollback();
      }
      assertThat(f.row("w")).containsEntry("state", "running");
      assertThat(settle("worker-a", new Settlement.Complete(a.ref(), null, null, null)).applied())
          .isTrue();
    }

    private void lockRow(Connection holder, String workId) throws Exception {
      holder.setAutoCommit(false);
      try (PreparedStatement ps =
          holder.prepareStatement(
              "SELECT work_id FROM " + f.schema + ".outbox WHERE work_id = ? FOR UPDATE")) {
        ps.setString(1, workId);
        ps.executeQuery().close();
      }
    }
  }

  @Nested
  class GuardedWrites {
    @Test
    void renewalExtendsALiveLeaseAndReportsACancelRequest() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", Duration.ofSeconds(30));
      Rows.update(
          f.ds, f.schema, "UPDATE {schema}.outbox SET cancel_requested_at = clock_timestamp()");

      WriteResult r = f.with(c -> f.store.renew(c, "worker-a", List.of(a.ref()), LONG)).get(0);

      assertThat(r.applied()).isTrue();
      assertThat(r.cancelRequested()).isTrue();
      assertThat(r.leaseUntil()).isAfter(a.leaseUntil());
    }

    @Test
    void batchKeepsTheGuardPerRow() {
      f.enqueue(Work.of("a", "k", "{}"), Work.of("b", "k", "{}"));
      List<ClaimedWork> claims = f.claim("worker-a", 2, LONG).claimed();
      ClaimRef a = claims.get(0).ref();
      ClaimRef bWrongGeneration = new ClaimRef(claims.get(1).workId(), 99);

      List<WriteResult> results =
          f.with(
              c ->
                  f.store.settle(
                      c,
                      "worker-a",
                      List.of(
                          new Settlement.Complete(bWrongGeneration, null, null, null),
                          new Settlement.Complete(a, "ref-a", null, "accepted"))));

      assertThat(results).extracting(WriteResult::applied).containsExactly(false, true);
      assertThat(f.row("a")).containsEntry("state", "done");
      assertThat(f.row("b")).containsEntry("state", "running");
    }

    @Test
    void retryMakesTheWorkReadyLaterWithItsErrorAndHistory() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", LONG);

      assertThat(
              settle(
                      "worker-a",
                      new Settlement.Retry(
                          a.ref(),
                          Duration.ofHours(1),
                          "timeout",
                          "no answer in 10 s",
                          Evidence.UNKNOWN))
                  .applied())
          .isTrue();

      assertThat(f.row("w"))
          .containsEntry("state", "ready")
          .containsEntry("claimed_by", null)
          .containsEntry("last_error_kind", "timeout")
          .containsEntry("outcome", "unknown");
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.work"
                      + " WHERE available_at > clock_timestamp() + interval '50 minutes'"))
          .isEqualTo(1);
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.attempt WHERE ending = 'retry'"
                      + " AND generation = 1"))
          .isEqualTo(1);
      assertThat(f.claim("worker-b", 1, LONG).claimed()).isEmpty();
    }

    @Test
    void laterNotDeliveredNeverHidesAnEarlierUnknownEffect() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork first = claimOne("worker-a", LONG);
      settle(
          "worker-a",
          new Settlement.Retry(
              first.ref(), Duration.ZERO, "timeout", "no answer", Evidence.UNKNOWN));
      ClaimedWork second = claimOne("worker-a", LONG);

      settle(
          "worker-a",
          new Settlement.Fail(
              second.ref(), "permanent", "400 bad address", Evidence.NOT_DELIVERED));

      // The first attempt may have had its effect: the row must not read "not delivered".
      assertThat(f.row("w")).containsEntry("state", "failed").containsEntry("outcome", "unknown");
      assertThat(f.count("SELECT count(*) FROM {schema}.attempt WHERE outcome = 'not_delivered'"))
          .isEqualTo(1);
    }

    @Test
    void releaseReturnsUnstartedWorkAtOnceWithoutCountingTheAttempt() {
      f.enqueue(Work.of("w", "k", "{}"));
      ClaimedWork a = claimOne("worker-a", LONG);

      assertThat(f.with(c -> f.store.release(c, "worker-a", List.of(a.ref()))).get(0).applied())
          .isTrue();

      assertThat(f.row("w")).containsEntry("state", "ready").containsEntry("attempts", 0);
      ClaimedWork b = claimOne("worker-b", LONG);
      assertThat(b.generation()).isEqualTo(2);
      assertThat(b.attempt()).isEqualTo(1);
    }

    @Test
    void failAndCancelledEndTheWorkWithEvidence() {
      f.enqueue(Work.of("f", "k", "{}"), Work.of("x", "k", "{}"));
      List<ClaimedWork> claims = f.claim("worker-a", 2, LONG).claimed();

      f.with(
          c ->
              f.store.settle(
                  c,
                  "worker-a",
                  List.of(
                      new Settlement.Fail(
                          claims.get(0).ref(),
                          "permanent",
                          "400 bad address",
                          Evidence.NOT_DELIVERED),
                      new Settlement.Cancelled(
                          claims.get(1).ref(), "operator asked", Evidence.UNKNOWN))));

      assertThat(f.row("f"))
          .containsEntry("state", "failed")
          .containsEntry("outcome", "not_delivered")
          .containsEntry("last_error", "400 bad address");
      assertThat(f.row("x"))
          .containsEntry("state", "cancelled")
          .containsEntry("outcome", "unknown");
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.attempt WHERE ending IN ('failed', 'cancelled')"))
          .isEqualTo(2);
    }
  }

  @Nested
  class UncertainCommit {
    @Test
    void claimWhoseCommitReplyIsLostIsRecoveredFromTheStoredRows(TestDatabase db) throws Exception {
      f.enqueue(Work.of("order-103-ack", "k", "{}"));
      try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
          Connection viaProxy =
              DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
        proxy.dropReplyAfterNextCommit();

        assertThatThrownBy(
                () ->
                    f.store.claim(
                        viaProxy,
                        new ClaimRequest("worker-a", List.of("default"), List.of("k"), 10, LONG)))
            .isInstanceOf(CommitOutcomeUnknownException.class);
        assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
      }

      List<ClaimedWork> recovered = f.with(c -> f.store.recover(c, "worker-a"));

      assertThat(recovered)
          .singleElement()
          .satisfies(
              c -> {
                assertThat(c.workId()).isEqualTo("order-103-ack");
                assertThat(c.generation()).isEqualTo(1);
              });
      List<ClaimedWork> others = f.with(c -> f.store.recover(c, "worker-b"));
      assertThat(others).isEmpty();
    }
  }
}
