package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Ordered delivery under real concurrency: several workers, random handler times, many keys. Per
 * key, handlers start in sequence order and never overlap; different keys run side by side.
 */
@RelayDatabaseTest
class RelayOrderingTest {
  private static final int KEYS = 50;
  private static final int PER_KEY = 40;

  /** One handler run: its key, sequence and the order in which it started and ended. */
  record Run(String key, long sequence, long startTick, long endTick) {}

  @Test
  void perKeyHandlersFollowSequenceOrderAndNeverOverlapWhileKeysRunInParallel(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < PER_KEY; i++) {
        for (int k = 0; k < KEYS; k++) {
          works.add(Work.of("k" + k + "-" + i, "step", "{}").orderingKey("key-" + k));
        }
      }
      f.enqueue(works);

      AtomicInteger tick = new AtomicInteger();
      AtomicInteger running = new AtomicInteger();
      AtomicInteger maxRunning = new AtomicInteger();
      Map<String, List<Run>> runs = new ConcurrentHashMap<>();
      for (String worker : List.of("w1", "w2", "w3", "w4")) {
        f.start(
            f.builder(db.newDataSource("relay-" + worker, 5))
                .workerId(worker)
                .concurrency(4)
                .batchSize(10)
                .handle(
                    "step",
                    claim -> {
                      long start = tick.incrementAndGet();
                      maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
                      // Random handler time, so workers overtake each other across keys.
                      LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(3_000_000));
                      running.decrementAndGet();
                      runs.computeIfAbsent(claim.orderingKey(), k -> new ArrayList<>());
                      synchronized (runs.get(claim.orderingKey())) {
                        runs.get(claim.orderingKey())
                            .add(
                                new Run(
                                    claim.orderingKey(),
                                    claim.sequence(),
                                    start,
                                    tick.incrementAndGet()));
                      }
                      return Outcome.done();
                    }));
      }

      await()
          .atMost(Duration.ofMinutes(3))
          .until(
              () ->
                  f.db.queryLong(
                          "SELECT count(*) FROM " + db.schema() + ".work WHERE state = 'done'")
                      == (long) KEYS * PER_KEY);

      assertThat(runs).hasSize(KEYS);
      for (List<Run> list : runs.values()) {
        List<Run> byStart = new ArrayList<>(list);
        byStart.sort((a, b) -> Long.compare(a.startTick(), b.startTick()));
        assertThat(byStart).hasSize(PER_KEY);
        for (int i = 0; i < byStart.size(); i++) {
          assertThat(byStart.get(i).sequence()).as("start order of %s", list).isEqualTo(i + 1);
          if (i > 0) {
            assertThat(byStart.get(i).startTick())
                .as("%s starts after the previous item of its key ended", byStart.get(i))
                .isGreaterThan(byStart.get(i - 1).endTick());
          }
        }
      }
      assertThat(maxRunning.get()).as("different keys ran at the same time").isGreaterThan(1);
    }
  }
}
