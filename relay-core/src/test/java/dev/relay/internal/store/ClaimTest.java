package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class ClaimTest {
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  @Test
  void claimSetsRunningOwnerGenerationAttemptAndLease() {
    f.enqueue(Work.of("order-103-ack", "k", "{\"order_id\":103}"));

    ClaimBatch batch = f.claim("worker-a", 10, Duration.ofMinutes(1));

    assertThat(batch.claimed())
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.workId()).isEqualTo("order-103-ack");
              assertThat(c.generation()).isEqualTo(1);
              assertThat(c.attempt()).isEqualTo(1);
              assertThat(c.reclaimed()).isFalse();
              assertThat(c.payload()).contains("103");
            });
    Map<String, Object> row = f.row("order-103-ack");
    assertThat(row)
        .containsEntry("state", "running")
        .containsEntry("claimed_by", "worker-a")
        .containsEntry("claim_generation", 1L)
        .containsEntry("attempts", 1);
    assertThat(row.get("lease_until")).isNotNull();
    // An unexpired lease is not eligible.
    assertThat(f.claim("worker-b", 10, Duration.ofMinutes(1)).claimed()).isEmpty();
  }

  @Test
  void eightThreadsClaimingTwoThousandRowsNeverShareARowAndClaimEveryRow() throws Exception {
    int rows = 2000;
    f.enqueue(StoreFixture.many(rows, "k"));
    Map<String, String> owner = new ConcurrentHashMap<>();
    List<String> duplicates = new ArrayList<>();
    AtomicInteger claimed = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        String worker = "worker-" + t;
        futures.add(
            pool.submit(
                () -> {
                  // An empty batch does not prove the queue is empty; stop on the shared count.
                  while (claimed.get() < rows) {
                    for (ClaimedWork c : f.claim(worker, 25, Duration.ofMinutes(5)).claimed()) {
                      claimed.incrementAndGet();
                      String previous =
                          owner.putIfAbsent(c.workId() + "#" + c.generation(), worker);
                      if (previous != null) {
                        synchronized (duplicates) {
                          duplicates.add(c.workId());
                        }
                      }
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> future : futures) {
        future.get(5, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }

    assertThat(duplicates).isEmpty();
    assertThat(claimed.get()).isEqualTo(rows);
    assertThat(owner).hasSize(rows);
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.work WHERE state = 'running'"
                    + " AND claim_generation = 1"))
        .isEqualTo(rows);
  }

  @Test
  void rowLockedByAnOpenClaimTransactionIsSkippedNotWaitedOn() throws Exception {
    f.enqueue(Work.of("locked", "k", "{}"), Work.of("free", "k", "{}"));

    try (Connection holder = f.ds.getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement ps =
          holder.prepareStatement(
              "SELECT work_id FROM " + f.schema + ".outbox WHERE work_id = 'locked' FOR UPDATE")) {
        ps.executeQuery().close();
      }

      // Returns while the lock is still held: SKIP LOCKED never waits.
      ClaimBatch first = f.claim("worker-b", 10, Duration.ofMinutes(1));
      assertThat(first.claimed()).extracting(ClaimedWork::workId).containsExactly("free");

      // Zero rows now, yet "locked" is unfinished: an empty poll is not an empty queue.
      ClaimBatch second = f.claim("worker-b", 10, Duration.ofMinutes(1));
      assertThat(second.claimed()).isEmpty();
      assertThat(f.row("locked")).containsEntry("state", "ready");

      holder.rollback();
    }

    assertThat(f.claim("worker-b", 10, Duration.ofMinutes(1)).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactly("locked");
  }

  @Test
  void workNotYetAvailableIsNotClaimed() {
    f.enqueue(
        Work.of("later", "k", "{}").delay(Duration.ofHours(1)),
        Work.of("future", "k", "{}").availableAt(Instant.now().plus(Duration.ofDays(1))));

    assertThat(f.claim("worker-a", 10, Duration.ofMinutes(1)).claimed()).isEmpty();
  }

  @Test
  void aClaimOverSeveralQueuesTakesTheBatchInClaimOrderAcrossThem() {
    Instant t = Instant.now().minus(Duration.ofHours(1));
    f.enqueue(
        Work.of("mail-1", "k", "{}").queue("mail").availableAt(t.plusSeconds(1)),
        Work.of("mail-urgent", "k", "{}").queue("mail").priority(5).availableAt(t.plusSeconds(9)),
        Work.of("sms-1", "k", "{}").queue("sms").availableAt(t.plusSeconds(2)),
        Work.of("mail-2", "k", "{}").queue("mail").availableAt(t.plusSeconds(3)),
        Work.of("sms-2", "k", "{}").queue("sms").availableAt(t.plusSeconds(4)),
        Work.of("other-queue", "k", "{}").queue("push").availableAt(t),
        Work.of("sms-other-kind", "x", "{}").queue("sms").availableAt(t));

    ClaimBatch first = f.claim("worker-a", List.of("mail", "sms"), 3);
    // the highest priority first, then the earliest of either queue; never more than the batch
    assertThat(first.claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-urgent", "mail-1", "sms-1");
    assertThat(first.last().workId()).isEqualTo("sms-1");
    // the rows each queue's scan locked and the batch did not take were released, not claimed
    assertThat(f.row("mail-2")).containsEntry("state", "ready");
    assertThat(f.row("sms-2")).containsEntry("state", "ready");
    assertThat(f.claim("worker-b", List.of("mail", "sms"), 10).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-2", "sms-2");
    assertThat(f.row("other-queue")).containsEntry("state", "ready");
    assertThat(f.row("sms-other-kind")).containsEntry("state", "ready");
  }

  @Test
  void aQueueNamedTwiceIsScannedOnce() {
    f.enqueue(
        Work.of("mail-1", "k", "{}").queue("mail"), Work.of("mail-2", "k", "{}").queue("mail"));
    assertThat(
            new ClaimRequest("w", List.of("mail", "mail"), List.of("k"), 10, Duration.ofMinutes(1))
                .queues())
        .containsExactly("mail");
    assertThat(f.claim("worker-a", List.of("mail", "mail"), 10).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-1", "mail-2");
  }

  @Test
  void aClaimOverSeveralQueuesSkipsLockedRowsInEachQueue() throws Exception {
    f.enqueue(
        Work.of("mail-locked", "k", "{}").queue("mail"),
        Work.of("mail-free", "k", "{}").queue("mail"),
        Work.of("sms-free", "k", "{}").queue("sms"));
    try (Connection holder = f.ds.getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement ps =
          holder.prepareStatement(
              "SELECT work_id FROM "
                  + f.schema
                  + ".outbox WHERE work_id = 'mail-locked' FOR UPDATE")) {
        ps.executeQuery().close();
      }
      assertThat(f.claim("worker-a", List.of("mail", "sms"), 10).claimed())
          .extracting(ClaimedWork::workId)
          .containsExactlyInAnyOrder("mail-free", "sms-free");
      holder.rollback();
    }
  }

  @Test
  void claimTakesOnlyTheRequestedQueuesAndKinds() {
    f.enqueue(
        Work.of("mine", "k", "{}"),
        Work.of("other-kind", "x", "{}"),
        Work.of("other-queue", "k", "{}").queue("mail"));

    assertThat(f.claim("worker-a", 10, Duration.ofMinutes(1)).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactly("mine");
  }

  @Test
  void expiredLeaseIsReclaimedWithTheNextGenerationAndRecorded() {
    f.enqueue(Work.of("w", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMillis(300));
    await().atMost(Duration.ofSeconds(60)).until(() -> f.leaseExpired("w"));

    ClaimBatch b = f.claim("worker-b", 1, Duration.ofMinutes(1));

    assertThat(b.claimed())
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.generation()).isEqualTo(2);
              assertThat(c.reclaimed()).isTrue();
              assertThat(c.previousOwner()).isEqualTo("worker-a");
            });
    assertThat(b.reclaimed()).isEqualTo(1);
    assertThat(
            Rows.query(
                f.ds, f.schema, "SELECT generation, worker, ending, outcome FROM {schema}.attempt"))
        .containsExactly(
            Map.of(
                "generation",
                1L,
                "worker",
                "worker-a",
                "ending",
                "lease_expired",
                "outcome",
                "unknown"));
  }

  @Test
  void itemWhoseAttemptsAreExhaustedByExpiredLeasesIsFailedAtClaimTime() {
    f.enqueue(Work.of("crashy", "k", "{}").maxAttempts(2));
    for (int i = 0; i < 2; i++) {
      assertThat(f.claim("worker-" + i, 1, Duration.ofMillis(200)).claimed()).hasSize(1);
      await().atMost(Duration.ofSeconds(60)).until(() -> f.leaseExpired("crashy"));
    }

    ClaimBatch b = f.claim("worker-x", 1, Duration.ofMinutes(1));

    assertThat(b.claimed()).isEmpty();
    assertThat(b.retired())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.reason()).isEqualTo("attempts_exhausted");
              assertThat(r.afterExpiredLease()).isTrue();
            });
    assertThat(f.row("crashy"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "attempts_exhausted")
        .containsEntry("outcome", "unknown")
        .containsEntry("claimed_by", null)
        .containsEntry("attempts", 2);
    assertThat(f.count("SELECT count(*) FROM {schema}.attempt WHERE ending = 'lease_expired'"))
        .isEqualTo(2);
    assertThat(f.claim("worker-y", 1, Duration.ofMinutes(1)).claimed()).isEmpty();
  }

  @Test
  void itemPastItsDeadlineIsFailedWithReasonDeadlineInsteadOfClaimed() {
    f.enqueue(Work.of("late", "k", "{}"));
    Rows.update(
        f.ds,
        f.schema,
        "UPDATE {schema}.outbox SET deadline = clock_timestamp() - interval '1 second'");

    ClaimBatch b = f.claim("worker-a", 10, Duration.ofMinutes(1));

    assertThat(b.claimed()).isEmpty();
    assertThat(b.retired()).extracting(RetiredWork::reason).containsExactly("deadline");
    assertThat(f.row("late"))
        .containsEntry("state", "failed")
        .containsEntry("last_error_kind", "deadline")
        .containsEntry("outcome", "not_delivered");
  }

  @Test
  void runningItemWithACancelRequestIsCancelledWhenItsLeaseExpires() {
    f.enqueue(Work.of("w", "k", "{}"));
    f.claim("worker-a", 1, Duration.ofMillis(200));
    Rows.update(
        f.ds, f.schema, "UPDATE {schema}.outbox SET cancel_requested_at = clock_timestamp()");
    await().atMost(Duration.ofSeconds(60)).until(() -> f.leaseExpired("w"));

    ClaimBatch b = f.claim("worker-b", 1, Duration.ofMinutes(1));

    assertThat(b.retired()).extracting(RetiredWork::reason).containsExactly("cancelled");
    assertThat(f.row("w")).containsEntry("state", "cancelled").containsEntry("outcome", "unknown");
  }

  @Test
  void oneClaimNeverTakesMoreThanItsLimit() {
    f.enqueue(StoreFixture.many(30, "k"));

    ClaimBatch b = f.claim("worker-a", 7, Duration.ofMinutes(1));

    assertThat(b.claimed()).hasSize(7);
    Set<String> ids = new HashSet<>();
    b.claimed().forEach(c -> ids.add(c.workId()));
    assertThat(f.count("SELECT count(*) FROM {schema}.work WHERE state = 'running'")).isEqualTo(7);
    assertThat(ids).hasSize(7);
  }

  @Test
  void resumedClaimStartsAfterThePositionAndLeavesEarlierRowsToAFullScan() {
    Instant base = Instant.parse("2026-01-01T00:00:00Z");
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      works.add(Work.of("w-" + i, "k", "{}").availableAt(base.plusMillis(i)));
    }
    f.enqueue(works);

    ClaimBatch first = f.claim("worker-a", 2, Duration.ofMinutes(1));
    assertThat(first.claimed()).extracting(ClaimedWork::workId).containsExactly("w-0", "w-1");
    assertThat(first.last().workId()).isEqualTo("w-1");
    assertThat(first.last().availableAt().toInstant()).isEqualTo(base.plusMillis(1));

    // A row before the position becomes eligible again (its claim released).
    releaseToReady("w-0");
    ClaimBatch resumed = f.claim("worker-b", 2, Duration.ofMinutes(1), first.last());
    assertThat(resumed.claimed()).extracting(ClaimedWork::workId).containsExactly("w-2", "w-3");

    // Only a scan from the start finds it.
    ClaimBatch full = f.claim("worker-c", 1, Duration.ofMinutes(1));
    assertThat(full.claimed()).extracting(ClaimedWork::workId).containsExactly("w-0");
  }

  @Test
  void resumedClaimStaysWithinThePositionsPriority() {
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    f.enqueue(
        Work.of("high-1", "k", "{}").priority(5).availableAt(t),
        Work.of("high-2", "k", "{}").priority(5).availableAt(t.plusMillis(1)),
        Work.of("low-1", "k", "{}").priority(0).availableAt(t.minusSeconds(60)));

    ClaimBatch first = f.claim("worker-a", 1, Duration.ofMinutes(1));
    assertThat(first.claimed()).extracting(ClaimedWork::workId).containsExactly("high-1");

    ClaimBatch resumed = f.claim("worker-a", 10, Duration.ofMinutes(1), first.last());
    assertThat(resumed.claimed()).extracting(ClaimedWork::workId).containsExactly("high-2");
    assertThat(f.claim("worker-a", 10, Duration.ofMinutes(1)).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactly("low-1");
  }

  @Test
  void lastPositionFollowsTheDatabasesOrderOfTiedWorkIds() {
    // Same priority and available_at: the work ID decides, in the column's collation, which may
    // order mixed case differently from Java's String.compareTo.
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    List<String> ids = List.of("B-2", "a-1", "b-3", "A-4", "_-5", "1-6");
    List<Work> works = new ArrayList<>();
    ids.forEach(id -> works.add(Work.of(id, "k", "{}").availableAt(t)));
    f.enqueue(works);
    String dbLast =
        f.with(
            c -> {
              try (PreparedStatement ps =
                      c.prepareStatement(
                          "SELECT work_id FROM "
                              + f.schema
                              + ".outbox ORDER BY priority DESC, available_at, work_id DESC"
                              + " LIMIT 1");
                  var rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
              }
            });

    ClaimBatch all = f.claim("worker-a", 10, Duration.ofMinutes(1));

    assertThat(all.claimed()).hasSize(ids.size());
    assertThat(all.last().workId()).isEqualTo(dbLast);
    assertThat(f.claim("worker-a", 10, Duration.ofMinutes(1), all.last()).claimed()).isEmpty();
  }

  @Test
  void aResumedClaimOverSeveralQueuesStartsAfterThePositionInEachQueue() {
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    f.enqueue(
        Work.of("mail-1", "k", "{}").queue("mail").availableAt(t.plusSeconds(1)),
        Work.of("sms-1", "k", "{}").queue("sms").availableAt(t.plusSeconds(2)),
        Work.of("mail-2", "k", "{}").queue("mail").availableAt(t.plusSeconds(3)),
        Work.of("sms-2", "k", "{}").queue("sms").availableAt(t.plusSeconds(4)),
        Work.of("mail-3", "k", "{}").queue("mail").availableAt(t.plusSeconds(5)),
        Work.of("sms-low", "k", "{}").queue("sms").priority(-1).availableAt(t));

    ClaimBatch first = f.claim("worker-a", List.of("mail", "sms"), 2);
    assertThat(first.claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-1", "sms-1");
    assertThat(first.last().workId()).isEqualTo("sms-1");
    // eligible again, but behind the position: a resumed claim does not see it
    releaseToReady("mail-1");

    ClaimBatch resumed = f.claim("worker-a", List.of("mail", "sms"), 10, first.last());
    // each queue from the position on, within its priority
    assertThat(resumed.claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-2", "sms-2", "mail-3");
    assertThat(resumed.last().workId()).isEqualTo("mail-3");
    // a claim from the start finds what lay behind the position and the lower priority
    assertThat(f.claim("worker-a", List.of("mail", "sms"), 10).claimed())
        .extracting(ClaimedWork::workId)
        .containsExactlyInAnyOrder("mail-1", "sms-low");
  }

  private void releaseToReady(String workId) {
    f.with(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE "
                      + f.schema
                      + ".outbox SET state = 'ready', claimed_by = NULL, lease_until = NULL"
                      + " WHERE work_id = ?")) {
            ps.setString(1, workId);
            return ps.executeUpdate();
          }
        });
  }
}
