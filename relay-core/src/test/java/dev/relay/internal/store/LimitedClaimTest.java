package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.FlowLimits;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The claim of a limited kind, one transaction at a time against real PostgreSQL. */
@RelayDatabaseTest
class LimitedClaimTest {
  private static final Duration LEASE = Duration.ofMinutes(5);

  private StoreFixture f;
  private String schema;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
    schema = db.schema();
  }

  private void limit(FlowLimits limits) {
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
                      Duration.ofDays(1),
                      Duration.ofSeconds(30),
                      Duration.ofDays(1),
                      "retry",
                      limits)));
          return null;
        });
  }

  private static List<Work> grouped(String prefix, String group, int n) {
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      works.add(Work.of(prefix + "-" + i, "k", "{}").group(group));
    }
    return works;
  }

  private void complete(String worker, ClaimedWork w) {
    assertThat(f.with(c -> f.store.complete(c, worker, w.ref(), null, null, "accepted")).applied())
        .isTrue();
  }

  @Test
  void aKindLimitedToTwoIsClaimedTwoAtATimeWhateverTheBatchAsks() {
    limit(new FlowLimits(2, null, null, null));
    f.enqueue(StoreFixture.many(6, "k"));

    ClaimBatch first = f.claim("worker-a", 10, LEASE);
    assertThat(first.claimed()).hasSize(2);
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).isEmpty();

    complete("worker-a", first.claimed().get(0));
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).hasSize(1);
  }

  @Test
  void aClaimWhoseLeaseExpiredNoLongerCounts() {
    limit(new FlowLimits(1, null, null, null));
    f.enqueue(StoreFixture.many(2, "k"));
    ClaimedWork held = f.claim("worker-a", 10, LEASE).claimed().get(0);
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).isEmpty();

    f.expireLease(held.workId());

    // the expired claim and the other row are both eligible; the limit lets one through
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).hasSize(1);
  }

  @Test
  void aPerGroupLimitTakesOnePerGroupAndSkipsFullGroupsInThePool() {
    limit(new FlowLimits(null, 1, null, null));
    // group a comes first in claim order and has a deep backlog
    f.enqueue(grouped("a", "a", 20));
    f.enqueue(grouped("b", "b", 2));

    // the pool of ten is all group a, of which one may run
    ClaimBatch first = f.claim("worker-a", 10, LEASE);
    assertThat(first.claimed())
        .extracting(ClaimedWork::workId)
        .singleElement()
        .asString()
        .startsWith("a-");
    // now group a is full and stays out of the pool, so its backlog does not hide group b
    ClaimBatch second = f.claim("worker-b", 10, LEASE);
    assertThat(second.claimed())
        .extracting(ClaimedWork::workId)
        .singleElement()
        .asString()
        .startsWith("b-");
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).isEmpty();

    complete("worker-b", second.claimed().get(0));
    assertThat(f.claim("worker-b", 10, LEASE).claimed())
        .extracting(ClaimedWork::workId)
        .singleElement()
        .asString()
        .startsWith("b-");
  }

  @Test
  void aLimitedKindOverSeveralQueuesTakesItsRoomInClaimOrderAcrossThem() {
    limit(new FlowLimits(3, 1, null, null));
    Instant t = Instant.now().minus(Duration.ofHours(1));
    f.enqueue(
        Work.of("mail-1", "k", "{}").queue("mail").group("a").availableAt(t.plusSeconds(1)),
        Work.of("mail-urgent", "k", "{}")
            .queue("mail")
            .group("b")
            .priority(5)
            .availableAt(t.plusSeconds(9)),
        // group a again, in the other queue: the per-group limit spans queues
        Work.of("sms-1", "k", "{}").queue("sms").group("a").availableAt(t.plusSeconds(2)),
        Work.of("sms-2", "k", "{}").queue("sms").group("c").availableAt(t.plusSeconds(3)),
        Work.of("mail-2", "k", "{}").queue("mail").group("d").availableAt(t.plusSeconds(4)),
        Work.of("push-1", "k", "{}").queue("push").group("e").availableAt(t));

    ClaimBatch first = f.claim("worker-a", List.of("mail", "sms"), 10);
    // the kind's three places, in claim order across both queues, one per group
    assertThat(first.claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-urgent", "mail-1", "sms-2");
    // what the queues' scans locked and the pool left was released, not claimed
    for (String id : List.of("sms-1", "mail-2", "push-1")) {
      assertThat(f.row(id)).containsEntry("state", "ready");
    }
    assertThat(f.claim("worker-b", List.of("mail", "sms"), 10).claimed()).isEmpty();

    complete("worker-a", first.claimed().get(0));
    assertThat(f.claim("worker-b", List.of("mail", "sms"), 10).claimed()).hasSize(1);
  }

  @Test
  void aRateLimitCountsReleasedClaimsAndLogsEachClaim() {
    limit(new FlowLimits(null, null, 3, Duration.ofHours(1)));
    f.enqueue(StoreFixture.many(5, "k"));

    ClaimBatch first = f.claim("worker-a", 2, LEASE);
    assertThat(first.claimed()).hasSize(2);
    f.with(c -> f.store.release(c, "worker-a", List.of(first.claimed().get(0).ref())));

    // two claims in the window, one released: room for one more within the hour
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).hasSize(1);
    assertThat(f.claim("worker-b", 10, LEASE).claimed()).isEmpty();
    assertThat(f.count("SELECT count(*) FROM {schema}.claim_log WHERE kind = 'k'")).isEqualTo(3);
  }

  @Test
  void theOrdinaryClaimNeverTakesALimitedKind() throws Exception {
    limit(new FlowLimits(1, null, null, null));
    f.enqueue(StoreFixture.many(3, "k"));

    ClaimBatch unchecked =
        f.with(
            c ->
                f.store.claim(
                    c,
                    new ClaimRequest("worker-a", List.of("default"), List.of("k"), 10, LEASE),
                    false));

    assertThat(unchecked.claimed()).isEmpty();
    assertThat(f.claim("worker-a", 10, LEASE).claimed()).hasSize(1);
  }

  @Test
  void aClaimWaitingOnTheLimiterCountsWhatTheHolderCommitted() throws Exception {
    limit(new FlowLimits(2, null, null, null));
    f.enqueue(StoreFixture.many(6, "k"));
    try (Connection holder = f.ds.getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement ps =
          holder.prepareStatement(
              "SELECT kind FROM " + schema + ".limiter WHERE kind = 'k' FOR UPDATE")) {
        ps.executeQuery().close();
      }
      CompletableFuture<ClaimBatch> waiting =
          CompletableFuture.supplyAsync(() -> f.claim("worker-b", 10, LEASE));
      // the claim is blocked on the limiter row (lockLimiters waits; it never skips)
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  f.count(
                          "SELECT count(*) FROM pg_stat_activity"
                              + " WHERE wait_event_type = 'Lock' AND query LIKE '%limiter%'")
                      > 0);
      // the holder claims two rows as another claimer would, and commits
      try (PreparedStatement ps =
          holder.prepareStatement(
              "UPDATE "
                  + schema
                  + ".outbox SET state = 'running', claimed_by = 'worker-a',"
                  + " lease_until = clock_timestamp() + interval '5 minutes',"
                  + " claim_generation = claim_generation + 1, attempts = attempts + 1"
                  + " WHERE work_id IN ('w-00000', 'w-00001')")) {
        ps.executeUpdate();
      }
      holder.commit();

      // counted in a statement after the lock was granted, the committed claims fill the limit
      assertThat(waiting.get()).extracting(b -> b.claimed().size()).isEqualTo(0);
    }
  }
}
