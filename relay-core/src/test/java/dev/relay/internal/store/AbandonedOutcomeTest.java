package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.admin.WorkDetail;
import dev.relay.internal.store.AbandonedOutcome.Operation;
import dev.relay.internal.store.Settlement.Evidence;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class AbandonedOutcomeTest {
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  private List<Map<String, Object>> abandonedRows() {
    return Rows.query(
        f.ds,
        f.schema,
        "SELECT work_id, generation, worker, action, error_kind, error, outcome, receiver_ref"
            + " FROM {schema}.attempt WHERE ending = 'abandoned' ORDER BY work_id");
  }

  @Test
  void givenUpOutcomesAreKeptOnceEachAndTheWorkRowsAreNotTouched() {
    f.enqueue(Work.of("a", "k", "{}"), Work.of("b", "k", "{}"));
    List<ClaimedWork> claimed = f.claim("worker-a", 2, Duration.ofMinutes(5)).claimed();
    assertThat(claimed).hasSize(2);
    f.expireLease("a");
    f.expireLease("b");
    Map<String, Object> rowA = f.row("a");
    Map<String, Object> rowB = f.row("b");
    List<AbandonedOutcome> items =
        List.of(
            AbandonedOutcome.of(
                new Settlement.Complete(claimed.get(0).ref(), "msg-7", "{\"ok\":true}", "queued")),
            AbandonedOutcome.of(
                new Settlement.Retry(
                    claimed.get(1).ref(), Duration.ZERO, "io", "reset", Evidence.UNKNOWN)));

    int first = f.with(c -> f.store.recordAbandoned(c, "worker-a", items));
    int again = f.with(c -> f.store.recordAbandoned(c, "worker-a", items));

    assertThat(first).isEqualTo(2);
    assertThat(again).isZero();
    assertThat(abandonedRows())
        .containsExactly(
            row("a", 1L, "complete", null, null, "delivered", "msg-7"),
            row("b", 1L, "retry", "io", "reset", "unknown", null));
    assertThat(f.row("a")).isEqualTo(rowA);
    assertThat(f.row("b")).isEqualTo(rowB);
    // the admin view reads the given-up action and receiver reference back
    assertThat(Admin.create(f.ds, f.schema).show("a").orElseThrow().attempts())
        .extracting(
            WorkDetail.Attempt::ending, WorkDetail.Attempt::action, WorkDetail.Attempt::receiverRef)
        .containsExactly(tuple("abandoned", "complete", "msg-7"));
  }

  @Test
  void twoItemsForOneClaimInOneCallKeepOneRowAndAnotherGenerationGetsItsOwn() {
    f.enqueue(Work.of("a", "k", "{}"));
    ClaimRef g1 = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    f.expireLease("a");
    ClaimRef g2 = f.claim("worker-b", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    AbandonedOutcome release = new AbandonedOutcome(g1, Operation.RELEASE, null, null, null, null);

    int added =
        f.with(
            c ->
                f.store.recordAbandoned(
                    c,
                    "worker-a",
                    List.of(
                        release,
                        release,
                        AbandonedOutcome.of(
                            new Settlement.Fail(g2, "permanent", "no", Evidence.NOT_DELIVERED)))));

    assertThat(added).isEqualTo(2);
    assertThat(
            Rows.query(
                f.ds,
                f.schema,
                "SELECT generation, action FROM {schema}.attempt"
                    + " WHERE ending = 'abandoned' ORDER BY generation"))
        .containsExactly(
            Map.of("generation", 1L, "action", "release"),
            Map.of("generation", 2L, "action", "fail"));
    assertThat(f.row("a"))
        .containsEntry("state", "running")
        .containsEntry("claimed_by", "worker-b");
  }

  private static Map<String, Object> row(
      String workId,
      long generation,
      String action,
      String errorKind,
      String error,
      String outcome,
      String receiverRef) {
    Map<String, Object> m = new java.util.LinkedHashMap<>();
    m.put("work_id", workId);
    m.put("generation", generation);
    m.put("worker", "worker-a");
    m.put("action", action);
    m.put("error_kind", errorKind);
    m.put("error", error);
    m.put("outcome", outcome);
    m.put("receiver_ref", receiverRef);
    return m;
  }
}
