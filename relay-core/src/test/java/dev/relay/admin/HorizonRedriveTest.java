package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Work;
import dev.relay.internal.store.ClaimRequest;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.RetiredWork;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 23: work the claim failed because its deduplication horizon had passed ({@code
 * horizon_passed}) is visible to operators and redrivable only with the audited override. The
 * override restarts the horizon at the redrive: the work runs once more, and is then protected
 * again by a full horizon measured from the redrive.
 */
@RelayDatabaseTest
class HorizonRedriveTest {
  private AdminFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new AdminFixture(db.dataSource(), db.schema());
    f.registerKind("k", Duration.ofHours(1));
  }

  private List<RetiredWork> claimRetired(String worker) {
    try (Connection c = f.ds.getConnection()) {
      return f.store
          .claim(
              c, new ClaimRequest(worker, List.of("default"), List.of("k"), 1, AdminFixture.LONG))
          .retired();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private void expireLease(String workId) {
    f.update(
        "UPDATE {schema}.outbox SET lease_until = clock_timestamp() - interval '1 millisecond'"
            + " WHERE work_id = ?",
        workId);
  }

  /** Claims, lets the lease expire after the horizon, and lets another claim find it. */
  private void passedHorizonOnTakeover(String workId) {
    f.enqueue(Work.of(workId, "k", "{}"));
    f.claimOne("k");
    f.update(
        "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '2 hours'"
            + " WHERE work_id = ?",
        workId);
    expireLease(workId);
    assertThat(claimRetired("worker-2"))
        .singleElement()
        .extracting(RetiredWork::reason)
        .isEqualTo("horizon_passed");
  }

  @Test
  void theFailureIsVisibleInTheDetailAndCountedByReason() {
    passedHorizonOnTakeover("acked");

    WorkDetail d = f.admin.show("acked").orElseThrow();
    assertThat(d.item().state()).isEqualTo("failed");
    assertThat(d.item().lastErrorKind()).isEqualTo("horizon_passed");
    assertThat(d.item().outcome()).isEqualTo("unknown");
    assertThat(d.attempts())
        .extracting(WorkDetail.Attempt::ending, WorkDetail.Attempt::errorKind)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("lease_expired", "lease_expired"),
            org.assertj.core.groups.Tuple.tuple("failed", "horizon_passed"));
    assertThat(f.admin.health(Duration.ofHours(1)).get(0).failuresByReason())
        .containsEntry("horizon_passed", 1L);
  }

  @Test
  void aRedriveWithoutTheOverrideIsRefused() {
    passedHorizonOnTakeover("acked");

    assertThatThrownBy(() -> f.admin.redrive("acked", RedriveRequest.of("mina", "again")))
        .isInstanceOfSatisfying(
            RedriveRefusedException.class,
            e ->
                assertThat(e.reason())
                    .isEqualTo(RedriveRefusedException.Reason.PAST_DEDUP_HORIZON));
    assertThat(f.row("acked")).containsEntry("state", "failed");
    assertThat(f.count("SELECT count(*) FROM {schema}.redrive_audit")).isZero();
  }

  @Test
  void theOverrideRunsTheWorkOnceMoreAuditedAndItIsProtectedAgainFromTheRedrive() {
    passedHorizonOnTakeover("acked");

    RedriveResult r =
        f.admin.redrive("acked", RedriveRequest.of("mina", "receiver checked").overridingHorizon());

    assertThat(r.redriven()).isTrue();
    assertThat(r.forced()).isTrue();
    assertThat(f.query("SELECT actor, forced FROM {schema}.redrive_audit"))
        .singleElement()
        .satisfies(a -> assertThat(a).containsEntry("actor", "mina").containsEntry("forced", true));
    // It runs once more: the override restarted the horizon at the redrive.
    ClaimedWork again = f.claimOne("k");
    assertThat(again.generation()).isEqualTo(2);
    // The preview and a plain redrive measure from the redrive now, not from the first attempt.
    assertThat(f.admin.redrivePreview("acked").pastHorizon()).isFalse();

    // Protected again: once the new horizon has passed, a takeover fails it as before.
    f.update(
        "UPDATE {schema}.outbox SET horizon_start = clock_timestamp() - interval '61 minutes'"
            + " WHERE work_id = 'acked'");
    expireLease("acked");
    assertThat(claimRetired("worker-3"))
        .singleElement()
        .extracting(RetiredWork::reason)
        .isEqualTo("horizon_passed");
    assertThat(f.admin.show("acked").orElseThrow().item().lastErrorKind())
        .isEqualTo("horizon_passed");
    assertThatThrownBy(() -> f.admin.redrive("acked", RedriveRequest.of("mina", "again")))
        .isInstanceOf(RedriveRefusedException.class);
  }

  @Test
  void aPlainRedriveInsideTheHorizonKeepsTheFirstAttemptAsItsStart() {
    f.failed("w", "k");
    f.update(
        "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '50 minutes'");
    assertThat(f.admin.redrive("w", RedriveRequest.of("mina", "again")).redriven()).isTrue();
    // Claimed after the horizon that began at the first attempt: not run again.
    f.update(
        "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '70 minutes'");

    assertThat(claimRetired("worker-2"))
        .singleElement()
        .extracting(RetiredWork::reason)
        .isEqualTo("horizon_passed");
  }
}
