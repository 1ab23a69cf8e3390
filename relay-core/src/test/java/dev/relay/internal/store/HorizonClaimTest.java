package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 23: the receiver's deduplication horizon is a rule of every claim. Before, it was checked
 * when a retry was scheduled and at redrive only, so a worker taking over an expired lease, or
 * claiming a retry late in a backlog, ran work again after the receiver had forgotten its ID. Time
 * is moved on the database clock by moving the first attempt back, never by sleeping.
 */
@RelayDatabaseTest
class HorizonClaimTest {
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  private void registerHorizon(Duration horizon, String unknownOutcome) {
    f.with(
        c -> {
          f.store.registerKinds(
              c,
              "worker-a",
              List.of(
                  new WorkStore.KindRow(
                      "k",
                      Duration.ofSeconds(1),
                      Duration.ofMinutes(1),
                      25,
                      Duration.ofMinutes(30),
                      Duration.ofSeconds(30),
                      horizon,
                      unknownOutcome)));
          return null;
        });
  }

  /** Moves the first attempt back by {@code minutes} on the database clock. */
  private void firstAttemptedMinutesAgo(String workId, int minutes) {
    f.with(
        c -> {
          try (var ps =
              c.prepareStatement(
                  "UPDATE "
                      + f.schema
                      + ".outbox SET first_attempt_at = clock_timestamp() - ? * interval '1 minute'"
                      + " WHERE work_id = ?")) {
            ps.setInt(1, minutes);
            ps.setString(2, workId);
            ps.executeUpdate();
          }
          return null;
        });
  }

  private List<Map<String, Object>> history(String workId) {
    return dev.relay.Rows.query(
        f.ds,
        f.schema,
        "SELECT generation, worker, ending, error_kind, error, outcome FROM {schema}.attempt"
            + " WHERE work_id = ? ORDER BY id",
        workId);
  }

  @Test
  void aTakeoverOfAnExpiredLeasePastTheHorizonFailsTheWorkInsteadOfRunningIt() {
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("acked", "k", "{}"));
    assertThat(f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed()).hasSize(1);
    // worker-a died right after the receiver accepted; its lease ran out past the horizon
    firstAttemptedMinutesAgo("acked", 61);
    f.expireLease("acked");

    ClaimBatch b = f.claim("worker-b", 1, Duration.ofMinutes(5));

    assertThat(b.claimed()).isEmpty();
    assertThat(b.retired())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.reason()).isEqualTo("horizon_passed");
              assertThat(r.state()).isEqualTo("failed");
              assertThat(r.afterExpiredLease()).isTrue();
            });
    assertThat(f.row("acked"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "horizon_passed")
        .containsEntry("outcome", "unknown")
        .containsEntry("claim_generation", 1L)
        .containsEntry("claimed_by", null);
    assertThat((String) f.row("acked").get("last_error"))
        .contains("deduplication horizon")
        .contains("not run again");
    List<Map<String, Object>> history = history("acked");
    assertThat(history).extracting(h -> h.get("ending")).containsExactly("lease_expired", "failed");
    assertThat(history.get(1))
        .containsEntry("generation", 1L)
        .containsEntry("worker", "worker-b")
        .containsEntry("error_kind", "horizon_passed")
        .containsEntry("outcome", "unknown");
    assertThat((String) history.get(1).get("error")).contains("deduplication horizon");
  }

  @Test
  void aTakeoverInsideTheHorizonStillRunsTheWork() {
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("acked", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMinutes(5));
    firstAttemptedMinutesAgo("acked", 59);
    f.expireLease("acked");

    ClaimBatch b = f.claim("worker-b", 1, Duration.ofMinutes(5));

    assertThat(b.claimed()).singleElement().satisfies(c -> assertThat(c.reclaimed()).isTrue());
    assertThat(b.retired()).isEmpty();
  }

  @Test
  void aRetryScheduledInsideTheHorizonButClaimedAfterItFailsTheWork() {
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("late", "k", "{}"));
    ClaimRef ref = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    firstAttemptedMinutesAgo("late", 50); // the retry is scheduled inside the horizon
    assertThat(
            f.with(
                    c ->
                        f.store.retry(
                            c,
                            "worker-a",
                            ref,
                            Duration.ZERO,
                            "timeout",
                            "read timed out",
                            Settlement.Evidence.UNKNOWN))
                .applied())
        .isTrue();
    firstAttemptedMinutesAgo("late", 70); // and waited in a backlog until after it

    ClaimBatch b = f.claim("worker-b", 1, Duration.ofMinutes(5));

    assertThat(b.claimed()).isEmpty();
    assertThat(b.retired())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.reason()).isEqualTo("horizon_passed");
              assertThat(r.afterExpiredLease()).isFalse();
            });
    assertThat(f.row("late"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "horizon_passed")
        .containsEntry("outcome", "unknown")
        .containsEntry("attempts", 1);
    assertThat(history("late"))
        .extracting(h -> h.get("ending") + "/" + h.get("error_kind"))
        .containsExactly("retry/timeout", "failed/horizon_passed");
  }

  @Test
  void aKindThatParksUnknownOutcomesStillFailsATakeoverPastTheHorizon() {
    registerHorizon(Duration.ofHours(1), "park");
    f.enqueue(Work.of("acked", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMinutes(5));
    firstAttemptedMinutesAgo("acked", 61);
    f.expireLease("acked");

    assertThat(f.claim("worker-b", 1, Duration.ofMinutes(5)).retired())
        .singleElement()
        .extracting(RetiredWork::reason)
        .isEqualTo("horizon_passed");
  }

  @Test
  void aKindThatParksUnknownOutcomesRetriesKnownNonDeliveriesPastTheHorizon() {
    // Such a kind schedules a retry only for work known not delivered (docs/guide.md): the
    // receiver has nothing to remember, so its retry window may outlast the horizon.
    registerHorizon(Duration.ofHours(1), "park");
    f.enqueue(Work.of("refused", "k", "{}"));
    ClaimRef ref = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    f.with(
        c ->
            f.store.retry(
                c,
                "worker-a",
                ref,
                Duration.ZERO,
                "http_503",
                "unavailable",
                Settlement.Evidence.NOT_DELIVERED));
    firstAttemptedMinutesAgo("refused", 70);

    assertThat(f.claim("worker-b", 1, Duration.ofMinutes(5)).claimed()).hasSize(1);
  }

  @Test
  void workNeverAttemptedIsClaimedHoweverOld() {
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("old", "k", "{}"));
    dev.relay.Rows.update(
        f.ds,
        f.schema,
        "UPDATE {schema}.outbox SET created_at = clock_timestamp() - interval '2 days',"
            + " available_at = clock_timestamp() - interval '2 days'");

    assertThat(f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed()).hasSize(1);
  }

  @Test
  void aKindWithoutAHorizonIsTakenOverHoweverLongAgoItWasFirstAttempted() {
    registerHorizon(Duration.ZERO, "park");
    f.enqueue(Work.of("no-memory", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMinutes(5));
    firstAttemptedMinutesAgo("no-memory", 60 * 24 * 30);
    f.expireLease("no-memory");

    assertThat(f.claim("worker-b", 1, Duration.ofMinutes(5)).claimed()).hasSize(1);
  }

  @Test
  void aClaimReleasedBeforeItsHandlerStartedStartsNoHorizon() {
    // Released claims are not attempts (the handler never started, nothing was sent): work whose
    // only claims were released is as fresh as work never claimed, however long it then waits.
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("released", "k", "{}"));
    ClaimRef ref = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    List<WriteResult> released = f.with(c -> f.store.release(c, "worker-a", List.of(ref)));
    assertThat(released).singleElement().satisfies(r -> assertThat(r.applied()).isTrue());
    assertThat(f.row("released")).containsEntry("first_attempt_at", null);
    // ... and then waits out a backlog longer than the horizon: two days pass for every stamp
    dev.relay.Rows.update(
        f.ds,
        f.schema,
        "UPDATE {schema}.outbox SET created_at = created_at - interval '2 days',"
            + " available_at = available_at - interval '2 days',"
            + " first_attempt_at = first_attempt_at - interval '2 days'");

    assertThat(f.claim("worker-b", 1, Duration.ofMinutes(5)).claimed()).hasSize(1);
  }

  @Test
  void aReleaseAfterARealAttemptKeepsTheHorizonOfThatAttempt() {
    registerHorizon(Duration.ofHours(1), "retry");
    f.enqueue(Work.of("tried", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMinutes(5));
    f.expireLease("tried"); // generation 1's effect is unknown
    ClaimRef ref = f.claim("worker-b", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    f.with(c -> f.store.release(c, "worker-b", List.of(ref)));
    firstAttemptedMinutesAgo("tried", 61);

    assertThat(f.claim("worker-c", 1, Duration.ofMinutes(5)).retired())
        .singleElement()
        .extracting(RetiredWork::reason)
        .isEqualTo("horizon_passed");
  }
}
