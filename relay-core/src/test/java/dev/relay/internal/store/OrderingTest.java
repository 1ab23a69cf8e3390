package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.EnqueueResult;
import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.admin.RedriveRequest;
import dev.relay.internal.store.Settlement.Evidence;
import dev.relay.receiver.KeyedHistory;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class OrderingTest {
  private static final Duration LONG = Duration.ofMinutes(5);
  private StoreFixture f;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new StoreFixture(db.dataSource(), db.schema());
  }

  private List<Long> sequences(String key) {
    List<Long> out = new ArrayList<>();
    for (Map<String, Object> r :
        Rows.query(
            f.ds,
            f.schema,
            "SELECT sequence FROM {schema}.work WHERE ordering_key = ? ORDER BY sequence",
            key)) {
      out.add((Long) r.get("sequence"));
    }
    return out;
  }

  private List<String> claimIds(String worker, int limit) {
    return f.claim(worker, limit, LONG).claimed().stream().map(ClaimedWork::workId).toList();
  }

  private ClaimedWork claimOnly(String workId) {
    List<ClaimedWork> claimed = f.claim("worker-a", 50, LONG).claimed();
    assertThat(claimed).extracting(ClaimedWork::workId).contains(workId);
    return claimed.stream().filter(c -> c.workId().equals(workId)).findFirst().orElseThrow();
  }

  @Nested
  class Enqueue {
    @Test
    void keyedItemsGetTheNextSequencesOfTheirKeyInTheCallersOrder() {
      f.enqueue(
          Work.of("z-received", "k", "{}").orderingKey("order-103"),
          Work.of("a-dispatch", "k", "{}").orderingKey("order-103"),
          Work.of("free", "k", "{}"),
          Work.of("m-other", "k", "{}").orderingKey("order-104"));
      f.enqueue(Work.of("b-cancelled", "k", "{}").orderingKey("order-103"));

      assertThat(f.row("z-received")).containsEntry("sequence", 1L);
      assertThat(f.row("a-dispatch")).containsEntry("sequence", 2L);
      assertThat(f.row("b-cancelled")).containsEntry("sequence", 3L);
      assertThat(f.row("m-other")).containsEntry("sequence", 1L);
      assertThat(f.row("free")).containsEntry("sequence", null).containsEntry("ordering_key", null);
    }

    @Test
    void idempotentRepeatConsumesNoSequence() {
      f.enqueue(Work.of("a", "k", "{\"v\":1}").orderingKey("key"));
      List<EnqueueResult> repeat =
          f.with(
              c -> {
                c.setAutoCommit(false);
                List<EnqueueResult> r =
                    f.outbox.enqueueAll(
                        c,
                        List.of(
                            Work.of("a", "k", "{\"v\":1.0}").orderingKey("key"),
                            Work.of("b", "k", "{}").orderingKey("key")));
                c.commit();
                return r;
              });

      assertThat(repeat)
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ALREADY_ENQUEUED, EnqueueResult.Status.ENQUEUED);
      assertThat(sequences("key")).containsExactly(1L, 2L);
    }

    @Test
    void concurrentProducersOnOneKeyGetGapFreeSequences() throws Exception {
      int threads = 8;
      int each = 40;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CyclicBarrier start = new CyclicBarrier(threads);
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int id = t;
          futures.add(
              pool.submit(
                  () -> {
                    start.await(60, TimeUnit.SECONDS);
                    for (int i = 0; i < each; i++) {
                      f.enqueue(Work.of("p" + id + "-" + i, "k", "{}").orderingKey("hot"));
                    }
                    return null;
                  }));
        }
        for (Future<?> fu : futures) {
          fu.get(5, TimeUnit.MINUTES);
        }
      } finally {
        pool.shutdownNow();
      }

      List<Long> expected = new ArrayList<>();
      for (long s = 1; s <= threads * each; s++) {
        expected.add(s);
      }
      assertThat(sequences("hot")).containsExactlyElementsOf(expected);
      // Each producer's items keep their own order.
      for (int t = 0; t < threads; t++) {
        long previous = 0;
        for (int i = 0; i < each; i++) {
          long s = (Long) f.row("p" + t + "-" + i).get("sequence");
          assertThat(s).isGreaterThan(previous);
          previous = s;
        }
      }
    }

    @Test
    void twoBulkProducersOverOverlappingKeysNeverDeadlock() throws Exception {
      List<String> keys = new ArrayList<>();
      for (int k = 0; k < 20; k++) {
        keys.add("key-" + k);
      }
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        for (int round = 0; round < 15; round++) {
          CyclicBarrier start = new CyclicBarrier(2);
          List<Future<?>> futures = new ArrayList<>();
          for (int p = 0; p < 2; p++) {
            List<String> mine = new ArrayList<>(keys);
            Collections.shuffle(mine, new Random(round * 2L + p));
            String prefix = "r" + round + "p" + p + "-";
            futures.add(
                pool.submit(
                    () -> {
                      List<Work> works = new ArrayList<>();
                      for (String key : mine) {
                        works.add(Work.of(prefix + key, "k", "{}").orderingKey(key));
                      }
                      start.await(60, TimeUnit.SECONDS);
                      f.enqueue(works);
                      return null;
                    }));
          }
          for (Future<?> fu : futures) {
            fu.get(2, TimeUnit.MINUTES); // a deadlock would surface as RetryableException 40P01
          }
        }
      } finally {
        pool.shutdownNow();
      }
      for (String key : keys) {
        assertThat(sequences(key)).hasSize(30).doesNotHaveDuplicates().endsWith(30L);
      }
    }
  }

  @Nested
  class ClaimGate {
    @Test
    void oneBatchTakesOnlyTheHeadOfEachKeyAndUnkeyedWorkFlowsFreely() {
      f.enqueue(
          Work.of("a1", "k", "{}").orderingKey("a"),
          Work.of("a2", "k", "{}").orderingKey("a"),
          Work.of("b1", "k", "{}").orderingKey("b"),
          Work.of("b2", "k", "{}").orderingKey("b"),
          Work.of("u1", "k", "{}"),
          Work.of("u2", "k", "{}"));

      assertThat(claimIds("worker-a", 50)).containsExactlyInAnyOrder("a1", "b1", "u1", "u2");
      // While a1 runs, a2 is held even for another worker.
      assertThat(claimIds("worker-b", 50)).isEmpty();
    }

    @Test
    void failedHeadShowsAsABlockedKeyUntilRedrivenAndThenRunsFirst() {
      Admin admin = Admin.create(f.ds, f.schema);
      f.enqueue(
          Work.of("a1", "k", "{}").orderingKey("a"), Work.of("a2", "k", "{}").orderingKey("a"));
      ClaimedWork a1 = claimOnly("a1");
      f.with(
          c ->
              f.store.settle(
                  c,
                  "worker-a",
                  List.of(
                      new Settlement.Fail(
                          a1.ref(), "permanent", "rejected", Evidence.NOT_DELIVERED))));
      assertThat(claimIds("worker-a", 50)).isEmpty();
      assertThat(admin.health(Duration.ofHours(1)))
          .singleElement()
          .satisfies(h -> assertThat(h.blockedKeys()).isEqualTo(1));

      admin.redrive("a1", RedriveRequest.of("mina@ops", "address fixed"));

      // The redriven head runs again, still first; a2 waits for it.
      ClaimedWork again = f.claim("worker-a", 50, LONG).claimed().get(0);
      assertThat(again.workId()).isEqualTo("a1");
      assertThat(again.generation()).isEqualTo(2);
      assertThat(admin.health(Duration.ofHours(1)).get(0).blockedKeys()).isZero();
      assertThat(claimIds("worker-a", 50)).isEmpty();
      f.with(
          c ->
              f.store.settle(
                  c, "worker-a", List.of(new Settlement.Complete(again.ref(), null, null, null))));
      ClaimedWork a2 = claimOnly("a2");
      assertThat(a2.previousDeliveredSequence()).isEqualTo(1L);
    }

    @Test
    void failedHeadBlocksOnlyItsKeyAndCancelUnblocksWithADeliberateGap() {
      f.enqueue(
          Work.of("a1", "k", "{}").orderingKey("a"),
          Work.of("a2", "k", "{}").orderingKey("a"),
          Work.of("a3", "k", "{}").orderingKey("a"),
          Work.of("b1", "k", "{}").orderingKey("b"),
          Work.of("b2", "k", "{}").orderingKey("b"));
      List<ClaimedWork> first = f.claim("worker-a", 50, LONG).claimed();
      ClaimedWork a1 =
          first.stream().filter(c -> c.workId().equals("a1")).findFirst().orElseThrow();
      assertThat(a1.sequence()).isEqualTo(1L);
      assertThat(a1.previousDeliveredSequence()).isNull();
      f.with(
          c ->
              f.store.settle(
                  c,
                  "worker-a",
                  first.stream()
                      .<Settlement>map(w -> new Settlement.Complete(w.ref(), null, null, null))
                      .toList()));

      List<ClaimedWork> second = f.claim("worker-a", 50, LONG).claimed();
      assertThat(second).extracting(ClaimedWork::workId).containsExactly("a2", "b2");
      ClaimedWork a2 = second.get(0);
      assertThat(a2.previousDeliveredSequence()).isEqualTo(1L);
      f.with(
          c ->
              f.store.settle(
                  c,
                  "worker-a",
                  List.of(
                      new Settlement.Fail(
                          a2.ref(), "permanent", "rejected", Evidence.NOT_DELIVERED),
                      new Settlement.Complete(second.get(1).ref(), null, null, null))));

      // The failed head holds key a; key b goes on.
      f.enqueue(Work.of("b3", "k", "{}").orderingKey("b"));
      assertThat(claimIds("worker-a", 50)).containsExactly("b3");
      assertThat(claimIds("worker-a", 50)).isEmpty();

      // Cancelling the failed head releases the key; the next item sees sequence 1 as the last
      // delivered one, so a strict-history receiver accepts it without waiting for 2.
      f.with(c -> f.store.cancel(c, "a2", "operator", "wrong address; superseded"));
      assertThat(f.row("a2"))
          .containsEntry("state", "cancelled")
          .containsEntry("outcome", "not_delivered");
      ClaimedWork a3 = claimOnly("a3");
      assertThat(a3.sequence()).isEqualTo(3L);
      assertThat(a3.previousDeliveredSequence()).isEqualTo(1L);

      KeyedHistory history = KeyedHistory.forSchema(f.schema);
      List<KeyedHistory.Status> decisions =
          f.with(
              c -> {
                c.setAutoCommit(false);
                List<KeyedHistory.Status> d = new ArrayList<>();
                d.add(history.offer(c, "ledger", "a", 1, null).status());
                d.add(
                    history
                        .offer(c, "ledger", "a", a3.sequence(), a3.previousDeliveredSequence())
                        .status());
                c.commit();
                return d;
              });
      assertThat(decisions).containsExactly(KeyedHistory.Status.APPLY, KeyedHistory.Status.APPLY);
    }
  }
}
