package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.CancelResult;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Work that a Relay completes or cancels leaves the work table for the history table (V25); the
 * operator sees it and acts on it through {@link Admin} exactly as on finished work in the work
 * table: shown, listed and counted, redriven (it runs again at a new generation), superseded and
 * purged by a bulk action, each with its audit. Driven from the user's side: enqueued with the
 * Outbox, finished by a running Relay, then handled with Admin.
 */
@RelayDatabaseTest
class FinishedWorkInHistoryTest {
  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private AdminFixture f;
  private Admin admin;
  private TestDatabase db;
  private Relay relay;

  /** The generations each item was run at, in order. */
  private final Map<String, List<Long>> runs = new ConcurrentHashMap<>();

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
    f = new AdminFixture(db.dataSource(), db.schema());
    admin = f.admin;
  }

  @AfterEach
  void stopRelay() {
    if (relay != null) {
      relay.close();
    }
  }

  /**
   * Starts a Relay for kind {@code k}: it completes every item, except that it fails items named
   * {@code bad-*} and cancels items named {@code drop-*}.
   */
  private void startRelay() {
    relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(100))
            .handle(
                "k",
                claim -> {
                  runs.computeIfAbsent(claim.workId(), id -> new CopyOnWriteArrayList<>())
                      .add(claim.generation());
                  if (claim.workId().startsWith("bad-")) {
                    return Outcome.fail("rejected");
                  }
                  if (claim.workId().startsWith("drop-")) {
                    return Outcome.cancel("no longer wanted", Outcome.Effect.NOT_DELIVERED);
                  }
                  return Outcome.done("ref-" + claim.workId());
                })
            .build();
    relay.start();
  }

  /**
   * Enqueues {@code ids} (kind {@code k}) with the Outbox and waits until each is {@code state}.
   */
  private void finish(String state, String... ids) {
    for (String id : ids) {
      f.enqueue(Work.of(id, "k", "{\"id\":\"" + id + "\"}"));
    }
    for (String id : ids) {
      awaitState(id, state);
    }
  }

  private void awaitState(String id, String state) {
    await()
        .atMost(PATIENCE)
        .until(() -> admin.show(id).map(d -> d.item().state()).orElse(null), state::equals);
  }

  /** Where the item's row is: "history", "work" or "none". */
  private String table(String id) {
    if (f.count("SELECT count(*) FROM {schema}.work_history WHERE work_id = ?", id) == 1) {
      return "history";
    }
    return f.count("SELECT count(*) FROM {schema}.outbox WHERE work_id = ?", id) == 1
        ? "work"
        : "none";
  }

  @Test
  void workARelayCompletedIsShownListedAndPagedFromTheHistoryTable() {
    startRelay();
    finish("done", "a-1", "a-2", "a-3");
    finish("failed", "bad-1");
    f.enqueue(Work.of("later-1", "k", "{}").delay(Duration.ofHours(1)));
    assertThat(List.of("a-1", "a-2", "a-3")).allMatch(id -> table(id).equals("history"));

    WorkDetail shown = admin.show("a-2").orElseThrow();
    assertThat(shown.item().state()).isEqualTo("done");
    assertThat(shown.item().generation()).isEqualTo(1);
    assertThat(shown.item().receiverRef()).isEqualTo("ref-a-2");
    assertThat(shown.item().completedAt()).isNotNull();
    assertThat(shown.payload()).isEqualTo("{\"id\": \"a-2\"}");

    assertThat(admin.list(WorkFilter.all().state("done"), null, 10).items())
        .extracting(WorkItem::workId)
        .containsExactly("a-1", "a-2", "a-3");
    assertThat(admin.list(WorkFilter.all().kind("k"), null, 10).items())
        .extracting(WorkItem::workId)
        .containsExactly("a-1", "a-2", "a-3", "bad-1", "later-1");
    // Keyset pages run across both tables in creation order, neither skipping nor repeating.
    WorkPage first = admin.list(WorkFilter.all(), null, 2);
    WorkPage second = admin.list(WorkFilter.all(), first.nextCursor(), 2);
    WorkPage third = admin.list(WorkFilter.all(), second.nextCursor(), 2);
    assertThat(first.items()).extracting(WorkItem::workId).containsExactly("a-1", "a-2");
    assertThat(second.items()).extracting(WorkItem::workId).containsExactly("a-3", "bad-1");
    assertThat(third.items()).extracting(WorkItem::workId).containsExactly("later-1");
    assertThat(third.nextCursor()).isNull();

    RedrivePreview preview = admin.redrivePreview("a-1");
    assertThat(preview.state()).isEqualTo("done");
    assertThat(preview.refusal()).isEqualTo(RedriveRefusedException.Reason.NOT_FAILED);
  }

  @Test
  void aRedriveOfDoneWorkInTheHistoryTableRunsItAgainAtANewGenerationWithItsAudit() {
    startRelay();
    finish("done", "w-1");
    assertThat(table("w-1")).isEqualTo("history");

    // Refused without force, as for done work anywhere: nothing changes, nothing moves.
    assertThatThrownBy(() -> admin.redrive("w-1", RedriveRequest.of("mina", "again?")))
        .isInstanceOf(RedriveRefusedException.class)
        .hasMessageContaining("not failed");
    assertThat(table("w-1")).isEqualTo("history");
    assertThat(f.count("SELECT count(*) FROM {schema}.redrive_audit")).isZero();

    RedriveResult r = admin.redrive("w-1", RedriveRequest.of("mina", "resend it").forced());

    assertThat(r.redriven()).isTrue();
    assertThat(r.fromState()).isEqualTo("done");
    assertThat(r.fromGeneration()).isEqualTo(1);
    assertThat(r.forced()).isTrue();
    await().atMost(PATIENCE).until(() -> runs.get("w-1").size() == 2);
    assertThat(runs.get("w-1")).containsExactly(1L, 2L);
    awaitState("w-1", "done");
    assertThat(table("w-1")).isEqualTo("history");
    WorkDetail shown = admin.show("w-1").orElseThrow();
    assertThat(shown.item().generation()).isEqualTo(2);
    assertThat(shown.redrives())
        .extracting(
            WorkDetail.Redrive::actor,
            WorkDetail.Redrive::reason,
            WorkDetail.Redrive::fromState,
            WorkDetail.Redrive::fromGeneration,
            WorkDetail.Redrive::forced)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("mina", "resend it", "done", 1L, true));
  }

  @Test
  void aFilteredRedriveAndABulkRedriveOfDoneWorkPickUpTheHistoryTable() {
    startRelay();
    finish("done", "a-1", "a-2", "b-1", "b-2", "b-3");
    finish("failed", "bad-1");

    // The filtered form: selected from both tables, each redriven in its batch.
    List<RedriveResult> some =
        admin.redrive(
            WorkFilter.all().state("done"), RedriveRequest.of("ops", "replay a").forced(), 2);
    assertThat(some).extracting(RedriveResult::workId).containsExactly("a-1", "a-2");
    assertThat(some).allMatch(RedriveResult::redriven);
    await().atMost(PATIENCE).until(() -> runs.get("a-2").size() == 2);
    awaitState("a-1", "done");
    awaitState("a-2", "done");

    // The stored bulk action: previewed, then run, over the done work of both tables.
    BulkPreview preview =
        admin.bulkPreview(WorkFilter.all().state("done"), BulkAction.REDRIVE, true);
    assertThat(preview.counts().matching()).isEqualTo(5);
    assertThat(preview.counts().changed()).isEqualTo(5);
    BulkProgress started =
        admin.startBulk(WorkFilter.all().state("done"), BulkAction.REDRIVE, true, "ops", "replay");
    BulkProgress ended = admin.runBulk(started.id());

    assertThat(ended.state()).isEqualTo("done");
    assertThat(ended.counts().changed()).isEqualTo(5);
    assertThat(ended.counts().gone()).isZero();
    for (String id : List.of("b-1", "b-2", "b-3")) {
      await().atMost(PATIENCE).until(() -> runs.get(id).size() == 2);
      awaitState(id, "done");
      assertThat(runs.get(id)).containsExactly(1L, 2L);
    }
    assertThat(runs.get("a-1")).containsExactly(1L, 2L, 3L);
    assertThat(runs.get("bad-1")).containsExactly(1L);
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.redrive_audit WHERE from_state = 'done'"
                    + " AND actor = 'ops' AND forced"))
        .isEqualTo(7);
  }

  @Test
  void theOverviewCountsDoneAndCancelledWorkInTheHistoryTable() {
    startRelay();
    finish("done", "a-1", "a-2", "a-3");
    finish("cancelled", "drop-1");
    finish("failed", "bad-1");
    assertThat(table("drop-1")).isEqualTo("history");

    admin.refreshSummary();
    List<QueueHealth> health = admin.health(Duration.ofHours(1));

    assertThat(health).hasSize(1);
    QueueHealth h = health.get(0);
    assertThat(h.done()).isEqualTo(3);
    assertThat(h.cancelled()).isEqualTo(1);
    assertThat(h.failed()).isEqualTo(1);
    assertThat(h.completedInWindow()).isEqualTo(3);
    assertThat(
            admin.completionsPerMinute(Duration.ofHours(1)).stream()
                .mapToLong(CompletionMinute::done)
                .sum())
        .isEqualTo(3);
  }

  @Test
  void aBulkPurgeMovesOnlyWhatItPurgesAndLeavesItsTombstone() {
    startRelay();
    finish("done", "old-1", "new-1");
    relay.close();
    relay = null;
    // old-1 ended three days ago, past its kind's deduplication horizon; new-1 just now.
    f.update(
        "UPDATE {schema}.work_history SET completed_at = clock_timestamp() - interval '3 days'"
            + " WHERE work_id = 'old-1'");

    BulkProgress started =
        admin.startBulk(WorkFilter.all().state("done"), BulkAction.PURGE, false, "ops", "gdpr");
    BulkProgress ended = admin.runBulk(started.id());

    assertThat(ended.counts().changed()).isEqualTo(1);
    assertThat(ended.counts().refusedHorizon()).isEqualTo(1);
    assertThat(table("old-1")).isEqualTo("none");
    // Refused, it stays where its worker left it.
    assertThat(table("new-1")).isEqualTo("history");
    assertThat(
            f.query(
                "SELECT final_state, last_generation FROM {schema}.tombstone"
                    + " WHERE work_id = 'old-1'"))
        .containsExactly(Map.of("final_state", "done", "last_generation", 1L));
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.purge_item_audit WHERE work_id = 'old-1'"
                    + " AND from_state = 'done' AND actor = 'ops'"))
        .isEqualTo(1);
    assertThat(admin.show("old-1")).isEmpty();
    // Its identity outlives it: another payload under the ID is still refused.
    assertThatThrownBy(() -> f.enqueue(Work.of("old-1", "k", "{\"other\": true}")))
        .isInstanceOf(WorkConflictException.class);
  }

  @Test
  void supersedeJudgesFinishedWorkInTheHistoryTableAsDoneOrCancelled() {
    startRelay();
    finish("done", "a-1");
    finish("cancelled", "drop-1");

    assertThatThrownBy(
            () -> admin.supersede("a-1", Work.of("a-1-v2", "k", "{}"), "ops", "wrong address"))
        .isInstanceOf(SupersedeRefusedException.class)
        .hasMessageContaining("done");
    assertThat(table("a-1")).isEqualTo("history");
    assertThat(admin.show("a-1-v2")).isEmpty();

    SupersedeResult r =
        admin.supersede("drop-1", Work.of("fixed-1", "k", "{}"), "ops", "corrected");

    assertThat(r.oldWork()).isEqualTo(CancelResult.Status.ALREADY_FINISHED);
    assertThat(admin.show("drop-1").orElseThrow().supersededBy())
        .extracting(WorkDetail.SupersedeLink::workId)
        .containsExactly("fixed-1");
    awaitState("fixed-1", "done");
  }
}
