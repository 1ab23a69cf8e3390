package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.EnqueueResult;
import dev.relay.Outbox;
import dev.relay.RetryableException;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.internal.admin.AdminStore;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Bulk redrive, cancel and purge by filter through the admin API on real PostgreSQL: the preview
 * counts what would change and what would be refused and changes nothing; the run handles every
 * matching item once, in batches, with one audit row per item (a purge also a tombstone that keeps
 * the ID's identity); a second run (after a crash, or at the same time) continues after the last
 * committed batch; work created after the start is not part of it; a worker claiming meanwhile
 * never gets an item the bulk cancelled; bad filters change nothing.
 */
@RelayDatabaseTest
class BulkTest {
  /** Inserts {@code n} failed items of {@code kind} ({@code prefix-1} ...), first attempted now. */
  static void failed(TestDatabase db, String prefix, String kind, int n, String firstAttempt)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, max_attempts, claim_generation, last_error_kind,"
            + " last_error) SELECT '"
            + prefix
            + "-' || g, '"
            + kind
            + "', '{}', 'failed', now() - interval '1 hour' + g * interval '1 millisecond',"
            + " now(), "
            + firstAttempt
            + ", 3, 3, 3, 'http_503', 'unavailable' FROM generate_series(1, "
            + n
            + ") g");
  }

  /** 450 failed within the horizon, 5 past it, 3 running, 2 done, all of kind a; 4 of kind b. */
  static void mixed(TestDatabase db) throws Exception {
    failed(db, "ok", "a", 450, "now()");
    failed(db, "old", "a", 5, "now() - interval '3650 days'");
    failed(db, "other", "b", 4, "now()");
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload)"
            + " SELECT 'run-' || g, 'a', '{}' FROM generate_series(1, 3) g;"
            // inserted ready, then claimed (only a local hand-off inserts a claim)
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'w1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1,"
            + " first_attempt_at = now() WHERE work_id LIKE 'run-%';"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " claim_generation, attempts, first_attempt_at)"
            + " SELECT 'done-' || g, 'a', '{}', 'done', now(), 1, 1, now()"
            + " FROM generate_series(1, 2) g");
  }

  @Test
  void thePreviewCountsAndChangesNothingTheRunAuditsEachItemInBatches(TestDatabase db)
      throws Exception {
    mixed(db);
    Admin admin = Admin.create(db.dataSource(), db.schema());
    WorkFilter a = WorkFilter.all().kind("a");

    BulkPreview p = admin.bulkPreview(a, BulkAction.REDRIVE, false);
    assertThat(p.counts()).isEqualTo(new BulkCounts(460, 450, 0, 3, 5, 2, 0));
    assertThat(p.capped()).isFalse();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'ready'")).isZero();
    assertThat(admin.bulkPreview(a, BulkAction.CANCEL, false).counts())
        .isEqualTo(new BulkCounts(460, 455, 3, 0, 0, 2, 0));

    BulkProgress started = admin.startBulk(a, BulkAction.REDRIVE, false, "olga", "INC-40 over");
    assertThat(started.running()).isTrue();
    assertThat(started.counts().matching()).isZero();
    BulkProgress done = admin.runBulk(started.id());
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.finishedAt()).isNotNull();
    assertThat(done.counts()).isEqualTo(new BulkCounts(460, 450, 0, 3, 5, 2, 0));
    assertThat(done.batches()).isEqualTo(3); // 200, 200, 60
    assertThat(done.filter()).isEqualTo(a);
    assertThat(admin.bulk(started.id())).contains(done);
    assertThat(admin.bulks(10)).containsExactly(done);

    assertThat(
            db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'ready' AND kind = 'a'"))
        .isEqualTo(450);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.redrive_audit"
                    + " WHERE actor = 'olga' AND reason = 'INC-40 over' AND from_state = 'failed'"))
        .isEqualTo(450);
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM {schema}.redrive_audit"))
        .isEqualTo(450);
    // kind b, past-horizon and running work untouched
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
        .isEqualTo(9);
    // a second run of an ended action changes nothing
    assertThat(admin.runBulk(started.id())).isEqualTo(done);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.redrive_audit")).isEqualTo(450);
  }

  @Test
  void aRerunAfterACrashAndTwoRunnersAtOnceHandleEachItemOnce(TestDatabase db) throws Exception {
    failed(db, "f", "a", 1_000, "now()");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    BulkProgress started =
        admin.startBulk(
            WorkFilter.all().state("failed").kind("a"), BulkAction.REDRIVE, false, "olga", "x");
    // One batch committed, then the process died: the row says exactly what was done.
    AdminStore store = new AdminStore(SchemaName.of(db.schema()), Timeouts.DEFAULT);
    try (Connection c = db.dataSource().getConnection()) {
      BulkProgress one = store.runBulkBatch(c, started.id(), Admin.BULK_BATCH);
      assertThat(one.running()).isTrue();
      assertThat(one.counts().changed()).isEqualTo(200);
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'ready'"))
        .isEqualTo(200);
    // Work created after the start is not part of it.
    failed(db, "late", "a", 3, "now()");
    db.execute(
        "UPDATE {schema}.outbox SET created_at = now() + interval '1 s' WHERE work_id LIKE 'late-%'");

    // Two runners continue it at once: batches take turns on the bulk row.
    CompletableFuture<BulkProgress> first =
        CompletableFuture.supplyAsync(() -> admin.runBulk(started.id()));
    CompletableFuture<BulkProgress> second =
        CompletableFuture.supplyAsync(() -> admin.runBulk(started.id()));
    BulkProgress end = first.join();
    assertThat(second.join()).isEqualTo(end);
    assertThat(end.counts().changed()).isEqualTo(1_000);
    assertThat(end.counts().matching()).isEqualTo(1_000);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM (SELECT work_id FROM {schema}.redrive_audit"
                    + " GROUP BY work_id HAVING count(*) > 1) t"))
        .isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.redrive_audit")).isEqualTo(1_000);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
        .isEqualTo(3);
  }

  private static BulkProgress redriveFailedOfKindA(Admin admin) {
    return admin.startBulk(
        WorkFilter.all().state("failed").kind("a"), BulkAction.REDRIVE, false, "olga", "x");
  }

  /** A connection in a transaction that holds bulk action {@code id}'s row, as a batch does. */
  private static Connection holdingTheBulkRow(TestDatabase db, long id) throws Exception {
    Connection c = db.dataSource().getConnection();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute(
          "SELECT 1 FROM " + db.schema() + ".bulk_operation WHERE id = " + id + " FOR UPDATE");
    }
    return c;
  }

  @Test
  void aRunnerThatWaitsPastTheLockTimeoutForAnotherRunnersBatchGoesOn(TestDatabase db)
      throws Exception {
    failed(db, "f", "a", 50, "now()");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    BulkProgress started = redriveFailedOfKindA(admin);
    // Plays another runner whose batch holds the bulk row longer than the lock timeout (a slow or
    // loaded server): the waiting runner's lock wait ends in 55P03, and it must go on, not fail.
    try (Connection other = holdingTheBulkRow(db, started.id())) {
      CompletableFuture<BulkProgress> runner =
          CompletableFuture.supplyAsync(() -> admin.runBulk(started.id()));
      Set<String> waits = new HashSet<>();
      await()
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(200))
          .until(
              () -> {
                if (runner.isDone()) {
                  return true; // failed (the assertion below says how) or, wrongly, got through
                }
                waits.add(
                    db.queryString(
                        "SELECT coalesce(max(query_start)::text, '') FROM pg_stat_activity"
                            + " WHERE wait_event_type = 'Lock' AND query LIKE '%bulk_operation%'"
                            + " AND pid <> pg_backend_pid()"));
                waits.remove("");
                return waits.size() >= 2; // a second wait: the first one timed out
              });
      assertThat(runner).isNotDone();
      other.commit();
      BulkProgress end = runner.get(2, TimeUnit.MINUTES);
      assertThat(end.running()).isFalse();
      assertThat(end.counts().changed()).isEqualTo(50);
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.redrive_audit")).isEqualTo(50);
  }

  @Test
  void aRowHeldWithNoBatchCommittingForTwoLockTimeoutsIsReportedNotWaitedForeverAndChangesNothing(
      TestDatabase db) throws Exception {
    failed(db, "f", "a", 20, "now()");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    BulkProgress started = redriveFailedOfKindA(admin);
    try (Connection other = holdingTheBulkRow(db, started.id())) {
      assertThatThrownBy(() -> admin.runBulk(started.id()))
          .isInstanceOf(RetryableException.class)
          .satisfies(e -> assertThat(((RetryableException) e).sqlState()).isEqualTo("55P03"));
      other.rollback();
    }
    assertThat(admin.bulk(started.id()).orElseThrow().counts().changed()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.redrive_audit")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
        .isEqualTo(20);
  }

  @Test
  void aWorkerClaimingMeanwhileNeverGetsWorkTheBulkCancelled(TestDatabase db) throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload)"
            + " SELECT 'c-' || g, 'c', '{}' FROM generate_series(1, 800) g");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    BulkProgress started =
        admin.startBulk(WorkFilter.all().kind("c"), BulkAction.CANCEL, false, "olga", "drop c");
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger claimed = new AtomicInteger();
    List<String> claimedIds = java.util.Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<Void> worker =
        CompletableFuture.runAsync(
            () -> {
              while (!stop.get()) {
                f.claim("c", 5).forEach(w -> claimedIds.add(w.workId()));
                claimed.set(claimedIds.size());
              }
            });
    BulkProgress end;
    try {
      end = admin.runBulk(started.id());
    } finally {
      stop.set(true);
      worker.join();
    }
    // Every item was handled once: cancelled while ready, or asked to stop while running.
    assertThat(end.counts().matching()).isEqualTo(800);
    assertThat(end.counts().changed() + end.counts().requested()).isEqualTo(800);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.cancel_audit")).isEqualTo(800);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'"))
        .isEqualTo(end.counts().changed());
    // What the worker claimed is exactly what the bulk found running, and it was asked to stop.
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work"
                    + " WHERE state = 'running' AND cancel_requested_at IS NOT NULL"))
        .isEqualTo(end.counts().requested())
        .isEqualTo(claimedIds.size());
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.cancel_audit WHERE result = 'cancel_requested'"))
        .isEqualTo(claimedIds.size());
  }

  @Test
  void aBulkPurgeTombstonesAndAuditsFinishedWorkAndRefusesTheRest(TestDatabase db)
      throws Exception {
    // Kind p: 250 done and 5 cancelled two days ago (past the 24 h default horizon), 4 done just
    // now (within it), 3 failed, 1 ready, 1 running; kind q: done long ago, outside the filter.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, claim_generation, outcome)"
            + " SELECT 'old-' || g, 'p', jsonb_build_object('n', g), 'done',"
            + " now() - interval '3 days' + g * interval '1 millisecond',"
            + " now() - interval '2 days', now() - interval '3 days', 2, 2, 'delivered'"
            + " FROM generate_series(1, 250) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at,"
            + " completed_at) SELECT 'dropped-' || g, 'p', '{}', 'cancelled',"
            + " now() - interval '3 days', now() - interval '2 days' FROM generate_series(1, 5) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, claim_generation)"
            + " SELECT 'fresh-' || g, 'p', '{}', 'done', now(), now(), 1, 1"
            + " FROM generate_series(1, 4) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, claim_generation)"
            + " VALUES ('q-old', 'q', '{}', 'done', now() - interval '9 days', now(), 1, 1);"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload)"
            + " VALUES ('waiting', 'p', '{}'), ('run', 'p', '{}');"
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'w1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1,"
            + " first_attempt_at = now() WHERE work_id = 'run'");
    failed(db, "stuck", "p", 3, "now() - interval '3 days'");
    db.execute(
        "UPDATE {schema}.outbox SET completed_at = now() - interval '2 days'"
            + " WHERE work_id LIKE 'stuck-%'");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    WorkFilter p = WorkFilter.all().kind("p");

    BulkCounts expected = new BulkCounts(264, 255, 0, 1, 4, 4, 0);
    assertThat(admin.bulkPreview(p, BulkAction.PURGE, true).counts()).isEqualTo(expected);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone")).isZero();

    BulkProgress started = admin.startBulk(p, BulkAction.PURGE, true, "olga", "junk of INC-50");
    assertThat(started.force()).as("force means nothing to a purge").isFalse();
    BulkProgress done = admin.runBulk(started.id());
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.counts()).isEqualTo(expected);
    assertThat(done.batches()).isEqualTo(2); // 200, 64

    // Gone, each with a tombstone holding its identity and one audit row with the shared reason.
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE kind = 'p'")).isEqualTo(9);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.tombstone t WHERE t.work_id LIKE 'old-%'"
                    + " AND t.final_state = 'done' AND t.last_generation = 2"
                    + " AND t.outcome = 'delivered' AND t.payload_digest ="
                    + " {schema}.payload_digest(jsonb_build_object('n',"
                    + " substring(t.work_id FROM 5)::int))"))
        .isEqualTo(250);
    assertThat(
            db.queryLong("SELECT count(*) FROM {schema}.tombstone WHERE final_state = 'cancelled'"))
        .isEqualTo(5);
    assertThat(
            db.queryLong(
                "SELECT count(DISTINCT work_id) FROM {schema}.purge_item_audit WHERE actor = 'olga'"
                    + " AND reason = 'junk of INC-50' AND bulk_id = "
                    + started.id()))
        .isEqualTo(255);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.purge_item_audit")).isEqualTo(255);
    // Refused items and other kinds untouched.
    assertThat(
            db.queryString(
                "SELECT string_agg(work_id || ' ' || state, ', ' ORDER BY work_id)"
                    + " FROM {schema}.work WHERE work_id NOT LIKE 'fresh-%'"))
        .isEqualTo(
            "q-old done, run running, stuck-1 failed, stuck-2 failed, stuck-3 failed,"
                + " waiting ready");

    // The identity outlives the row: a late producer retry is recognised, a new payload refused.
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      assertThat(outbox.enqueue(c, Work.of("old-7", "p", "{\"n\": 7}")).status())
          .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThatThrownBy(() -> outbox.enqueue(c, Work.of("old-8", "p", "{\"n\": 9}")))
          .isInstanceOf(WorkConflictException.class)
          .hasMessageContaining("old-8");
      c.rollback();
    }

    // The per-item audit goes after the history retention, like the purge audit.
    db.execute("UPDATE {schema}.purge_item_audit SET purged_at = now() - interval '31 days'");
    assertThat(admin.purge(PurgePolicy.DEFAULT, true).audits()).isGreaterThanOrEqualTo(255);
    admin.purge(PurgePolicy.DEFAULT, false);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.purge_item_audit")).isZero();
  }

  @Test
  void badInputIsRefusedByNameAndNothingIsStoredOrChanged(TestDatabase db) throws Exception {
    failed(db, "f", "a", 3, "now()");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    assertThatThrownBy(
            () ->
                admin.startBulk(
                    WorkFilter.all().state("broken"), BulkAction.REDRIVE, false, "olga", "x"))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("filter.state");
    assertThatThrownBy(
            () ->
                admin.bulkPreview(WorkFilter.all().blockedReason("nope"), BulkAction.CANCEL, false))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("filter.blockedReason");
    assertThatThrownBy(
            () -> admin.startBulk(WorkFilter.all(), BulkAction.CANCEL, false, "olga", " "))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(() -> BulkAction.of("delete"))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("action");
    assertThatThrownBy(() -> admin.runBulk(42))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("42");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
        .isEqualTo(3);
  }
}
