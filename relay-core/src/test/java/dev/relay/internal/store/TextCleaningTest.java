package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Work;
import dev.relay.internal.store.Settlement.Evidence;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bug 1: text that Relay writes never fails a write. A NUL (as in an exception carrying a binary
 * body) or a lone surrogate is replaced where it is bound, and the stored text says so.
 */
@RelayDatabaseTest
class TextCleaningTest {
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  @Test
  void settleWithNulAndLoneSurrogatesInErrorTextReceiverRefAndResultIsRecorded() {
    f.enqueue(Work.of("a", "k", "{}"), Work.of("b", "k", "{}"), Work.of("c", "k", "{}"));
    List<ClaimedWork> claimed = f.claim("worker-a", 3, Duration.ofMinutes(5)).claimed();
    assertThat(claimed).hasSize(3);

    List<WriteResult> results =
        f.with(
            c ->
                f.store.settle(
                    c,
                    "worker-a",
                    List.of(
                        new Settlement.Retry(
                            claimed.get(0).ref(),
                            Duration.ZERO,
                            "io",
                            "bad\u0000text",
                            Evidence.UNKNOWN),
                        new Settlement.Complete(
                            claimed.get(1).ref(),
                            "ref\u0000\uD800",
                            "{\"body\":\"a\\u0000b\",\"s\":\"\\ud800\",\"ok\":\"\\u0041\\\\u0000\"}",
                            "accepted"),
                        new Settlement.Fail(
                            claimed.get(2).ref(),
                            "permanent\u0000",
                            "x\uDC00y",
                            Evidence.UNKNOWN))));

    assertThat(results).allMatch(WriteResult::applied);
    assertThat(f.row("a"))
        .containsEntry("state", "ready")
        .containsEntry(
            "last_error", "bad\uFFFDtext [relay: 1 character replaced (NUL or lone surrogate)]");
    assertThat(f.row("b"))
        .containsEntry("state", "done")
        .containsEntry(
            "receiver_ref",
            "ref\uFFFD\uFFFD [relay: 2 characters replaced (NUL or lone surrogate)]");
    List<String> stored =
        f.with(
            c -> {
              try (var ps =
                      c.prepareStatement(
                          "SELECT result->>'body', result->>'s', result->>'ok' FROM "
                              + f.schema
                              + ".work WHERE work_id = 'b'");
                  var rs = ps.executeQuery()) {
                rs.next();
                return List.of(rs.getString(1), rs.getString(2), rs.getString(3));
              }
            });
    assertThat(stored).containsExactly("a\uFFFDb", "\uFFFD", "A\\u0000");
    assertThat(f.row("c"))
        .containsEntry("state", "failed")
        .containsEntry(
            "last_error_kind",
            "permanent\uFFFD [relay: 1 character replaced (NUL or lone surrogate)]")
        .containsEntry(
            "last_error", "x\uFFFDy [relay: 1 character replaced (NUL or lone surrogate)]");
  }

  @Test
  void cancelAndAbandonedOutcomeWithNulAreRecorded() {
    f.enqueue(Work.of("a", "k", "{}"), Work.of("b", "k", "{}"));
    ClaimRef b = f.claim("worker-a", 1, Duration.ofMinutes(5)).claimed().get(0).ref();
    f.expireLease(b.workId());
    String other = b.workId().equals("a") ? "b" : "a";

    WorkStore.CancelRow cancel = f.with(c -> f.store.cancel(c, other, "ops\u0000", "why\u0000"));
    int abandoned =
        f.with(
            c ->
                f.store.recordAbandoned(
                    c,
                    "worker-a",
                    List.of(
                        AbandonedOutcome.of(
                            new Settlement.Retry(
                                b, Duration.ZERO, "io", "bad\u0000text", Evidence.UNKNOWN)))));

    assertThat(cancel.result()).isEqualTo("cancelled");
    assertThat(abandoned).isEqualTo(1);
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.attempt WHERE ending = 'abandoned'"
                    + " AND error LIKE 'bad\uFFFDtext [relay: 1 character replaced%'"))
        .isEqualTo(1);
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.cancel_audit WHERE actor LIKE 'ops\uFFFD [relay:%'"
                    + " AND reason LIKE 'why\uFFFD [relay:%'"))
        .isEqualTo(1);
  }
}
