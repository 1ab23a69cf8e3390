package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bug 2: the claim applies the kind's registered cap, not only the row's. A handler that kills its
 * process never settles: each claim is taken over when its lease passes, until the cap.
 */
@RelayDatabaseTest
class AttemptCapTest {
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  private void registerCap(int maxAttempts) {
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
                      maxAttempts,
                      Duration.ofDays(1),
                      Duration.ofSeconds(30),
                      Duration.ofDays(1),
                      "retry")));
          return null;
        });
  }

  /** Claims and "dies" (never settles, lease expired on the database clock) until none is left. */
  private int generationsUntilRetired(String workId, int atMost) {
    int generations = 0;
    for (int i = 0; i <= atMost; i++) {
      ClaimBatch b = f.claim("worker-" + i, 1, Duration.ofMinutes(5));
      if (b.claimed().isEmpty()) {
        assertThat(b.retired())
            .singleElement()
            .extracting(RetiredWork::reason)
            .isEqualTo("attempts_exhausted");
        return generations;
      }
      generations++;
      assertThat(b.claimed().get(0).generation()).isEqualTo(generations);
      f.expireLease(workId);
    }
    return generations;
  }

  @Test
  void aKindCappedAtThreeIsClaimedThreeTimesThenFailed() {
    registerCap(3);
    f.enqueue(Work.of("crashy", "k", "{}"));

    assertThat(generationsUntilRetired("crashy", 30)).isEqualTo(3);
    assertThat(f.row("crashy"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "attempts_exhausted")
        .containsEntry("attempts", 3);
    assertThat(f.count("SELECT count(*) FROM {schema}.attempt WHERE ending = 'lease_expired'"))
        .isEqualTo(3);
  }

  @Test
  void aKindCappedAtFiftyIsClaimedFiftyTimes() {
    registerCap(50);
    f.enqueue(Work.of("crashy", "k", "{}"));

    assertThat(generationsUntilRetired("crashy", 60)).isEqualTo(50);
    assertThat(f.row("crashy")).containsEntry("state", "failed").containsEntry("attempts", 50);
  }

  @Test
  void aCapTheProducerNamedStillAppliesWhenLowerThanTheKinds() {
    registerCap(50);
    f.enqueue(Work.of("crashy", "k", "{}").maxAttempts(2));

    assertThat(generationsUntilRetired("crashy", 60)).isEqualTo(2);
  }

  @Test
  void theClaimReportsTheCapItApplies() {
    registerCap(3);
    f.enqueue(Work.of("a", "k", "{}"));

    assertThat(f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).maxAttempts())
        .isEqualTo(3);
    assertThat(f.with(c -> f.store.recover(c, "worker-a")).get(0).maxAttempts()).isEqualTo(3);
  }

  @Test
  void aRetryPastTheKindsCapFailsAtSettle() {
    f.enqueue(Work.of("a", "k", "{}"));
    ClaimRef ref = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    registerCap(1); // lowered while the claim ran

    WriteResult r =
        f.with(
            c ->
                f.store.retry(
                    c, "worker-a", ref, Duration.ZERO, "io", "reset", Settlement.Evidence.UNKNOWN));

    assertThat(r.applied()).isTrue();
    assertThat(f.row("a"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "attempts_exhausted")
        .containsEntry("last_error", "all 1 attempts used; last error (io): reset");
  }
}
