package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.CancelResult;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Blocked dependents as status and list show them: counted per kind by reason in {@link
 * Admin#health}, listed with {@link WorkFilter#blocked()} in keyset pages, with the same reason as
 * {@link Admin#blockedBy}.
 */
@RelayDatabaseTest
class BlockedWorkTest {
  private AdminFixture f;
  private TestDatabase db;

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    f = new AdminFixture(db.dataSource(), db.schema());
    // "manual" work has no worker here: it stays where the test puts it.
    db.execute(
        "INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,"
            + " final_state) VALUES ('old-failed', 'manual', 'x', 1, 'failed'),"
            + " ('old-gone', 'manual', 'x', 1, 'done')");
    f.enqueue(Work.of("a", "manual", "{}"), Work.of("s", "manual", "{}"));
    f.enqueue(Work.of("b", "step", "{}").dependsOn("a"));
    f.enqueue(Work.of("c", "step", "{}").dependsOn("b"));
    f.enqueue(Work.of("waits", "step", "{}").dependsOn("s"));
    f.enqueue(Work.of("z", "step", "{}").dependsOn("old-failed"));
    f.enqueue(Work.of("w", "other", "{}").dependsOn("old-gone"));
    f.enqueue(Work.of("plain", "step", "{}"));
    // the tombstone passes its identity horizon: w's dependency is gone
    db.execute("DELETE FROM {schema}.tombstone WHERE work_id = 'old-gone'");
    f.admin.cancel("a", "mina@ops", "order withdrawn");
  }

  @Test
  void statusCountsBlockedDependentsPerKindByReason() {
    Map<String, QueueHealth> byKind = new java.util.HashMap<>();
    for (QueueHealth h : f.admin.health(Duration.ofHours(1))) {
      byKind.put(h.kind(), h);
    }
    // b is held by a directly, c through b; "waits" only waits; "plain" waits for nothing
    assertThat(byKind.get("step").blockedByReason())
        .isEqualTo(Map.of("dependency_cancelled", 2L, "dependency_failed", 1L));
    assertThat(byKind.get("step").blocked()).isEqualTo(3);
    assertThat(byKind.get("step").ready()).isEqualTo(5);
    assertThat(byKind.get("other").blockedByReason()).isEqualTo(Map.of("dependency_missing", 1L));
    assertThat(byKind.get("manual").blocked()).isZero();
  }

  @Test
  void aSupersededDependencyIsCountedWithItsOwnReason() {
    f.admin.supersede("s", Work.of("s-v2", "manual", "{}"), "mina@ops", "wrong amount");
    QueueHealth step =
        f.admin.health(Duration.ofHours(1)).stream()
            .filter(h -> h.kind().equals("step"))
            .findFirst()
            .orElseThrow();
    assertThat(step.blockedByReason()).containsEntry("dependency_superseded", 1L);
    assertThat(ids(f.admin.list(WorkFilter.all().blockedReason("dependency_superseded"), null, 10)))
        .containsExactly("waits");
  }

  @Test
  void theBlockedFilterListsHeldDependentsInKeysetPages() {
    List<String> seen = new ArrayList<>();
    String cursor = null;
    int pages = 0;
    do {
      WorkPage page = f.admin.list(WorkFilter.all().blocked(), cursor, 2);
      seen.addAll(ids(page));
      cursor = page.nextCursor();
      pages++;
    } while (cursor != null);
    assertThat(seen).containsExactly("b", "c", "z", "w");
    assertThat(pages).isEqualTo(2);
    for (String id : seen) {
      assertThat(f.admin.blockedBy(id)).as(id).isPresent();
    }
  }

  @Test
  void theReasonFilterCombinesWithTheOthers() {
    assertThat(ids(f.admin.list(WorkFilter.all().blockedReason("dependency_failed"), null, 10)))
        .containsExactly("z");
    assertThat(
            ids(
                f.admin.list(
                    WorkFilter.all().kind("other").blockedReason("dependency_missing"), null, 10)))
        .containsExactly("w");
    assertThat(ids(f.admin.list(WorkFilter.all().kind("manual").blocked(), null, 10))).isEmpty();
  }

  @Test
  void redrivingTheDependencyReleasesItsDependentsFromTheCount() throws Exception {
    f.admin.redrive("a", RedriveRequest.of("mina@ops", "order back").forced());
    assertThat(ids(f.admin.list(WorkFilter.all().blocked(), null, 10))).containsExactly("z", "w");
  }

  @Test
  void cancellingByTheReasonEndsTheWholeHeldChainInOneCall() {
    List<CancelResult> results =
        f.admin.cancel(
            WorkFilter.all().blockedReason("dependency_cancelled"), "mina@ops", "withdrawn", 100);
    assertThat(results).extracting(CancelResult::workId).containsExactly("b", "c");
    assertThat(results)
        .extracting(CancelResult::status)
        .containsOnly(CancelResult.Status.CANCELLED);
    assertThat(ids(f.admin.list(WorkFilter.all().blocked(), null, 10))).containsExactly("z", "w");
  }

  @Test
  void cancellingWithDependentsEndsTheItemAndEverythingThatWaitsForIt() throws Exception {
    f.enqueue(Work.of("waits-2", "step", "{}").dependsOn("waits"));
    List<CancelResult> results = f.admin.cancelWithDependents("s", "mina@ops", "withdrawn");
    assertThat(results)
        .extracting(CancelResult::workId, CancelResult::status)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("s", CancelResult.Status.CANCELLED),
            org.assertj.core.groups.Tuple.tuple("waits", CancelResult.Status.CANCELLED),
            org.assertj.core.groups.Tuple.tuple("waits-2", CancelResult.Status.CANCELLED));
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.cancel_audit WHERE actor = 'mina@ops'"))
        .isEqualTo(4); // a (set-up), s, waits, waits-2
    // work that waits for other, unrelated dependencies is untouched
    assertThat(ids(f.admin.list(WorkFilter.all().state("ready").kind("step"), null, 10)))
        .containsExactly("b", "c", "z", "plain");
  }

  @Test
  void anUnknownReasonIsRefusedNamingTheFilter() {
    assertThatThrownBy(
            () -> f.admin.list(WorkFilter.all().blockedReason("dependency_late"), null, 10))
        .isInstanceOfSatisfying(
            InvalidAdminRequestException.class,
            e -> assertThat(e.field()).isEqualTo("filter.blockedReason"))
        .hasMessageContaining("dependency_late");
  }

  private static List<String> ids(WorkPage page) {
    return page.items().stream().map(WorkItem::workId).toList();
  }
}
