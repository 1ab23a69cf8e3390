package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Three workers in one JVM, each with its own pool, sharing one queue of 10,000 items. */
@RelayDatabaseTest
class RelayScaleTest {
  private static final int ITEMS = 10_000;

  /** One handler run, with local monotonic start and end. */
  record Run(String worker, long generation, long start, long end) {}

  @Test
  void tenThousandItemsAcrossThreeWorkersAllDoneWithoutOverlappingRuns(TestDatabase db)
      throws Exception {
    Map<String, List<Run>> runs = new ConcurrentHashMap<>();
    Map<String, AtomicInteger> inside = new ConcurrentHashMap<>();
    Set<String> overlaps = ConcurrentHashMap.newKeySet();
    // No-op handlers finish in microseconds: any timeout reported here is a runtime bug (a claim
    // seen RUNNING before its start time was set once looked decades past its timeout).
    AtomicInteger timeouts = new AtomicInteger();
    RelayEventListener countTimeouts =
        new RelayEventListener() {
          @Override
          public void timedOut(Claim claim) {
            timeouts.incrementAndGet();
          }
        };
    try (RelayFixture f = new RelayFixture(db)) {
      List<Work> works = new ArrayList<>(ITEMS);
      for (int i = 0; i < ITEMS; i++) {
        works.add(Work.of(String.format("item-%05d", i), "ack", "{\"n\":" + i + "}"));
      }
      f.enqueue(works);

      for (String worker : List.of("w1", "w2", "w3")) {
        f.start(
            f.builder(db.newDataSource("relay-" + worker, 6))
                .workerId(worker)
                .listener(countTimeouts)
                .concurrency(8)
                .batchSize(50)
                .bufferSize(50)
                .handle(
                    "ack",
                    claim -> {
                      long start = System.nanoTime();
                      AtomicInteger in =
                          inside.computeIfAbsent(claim.workId(), k -> new AtomicInteger());
                      if (in.incrementAndGet() > 1) {
                        overlaps.add(claim.workId());
                      }
                      in.decrementAndGet();
                      runs.computeIfAbsent(claim.workId(), k -> new CopyOnWriteArrayList<>())
                          .add(
                              new Run(
                                  claim.workerId(), claim.generation(), start, System.nanoTime()));
                      return Outcome.done();
                    }));
      }

      await()
          .atMost(Duration.ofSeconds(150))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> f.count("state = 'done'") == ITEMS);

      assertThat(f.count("state <> 'done'")).isZero();
      assertThat(timeouts).as("handler timeouts of no-op handlers").hasValue(0);
      assertThat(f.count("claimed_by IS NOT NULL OR lease_until IS NOT NULL")).isZero();
      assertThat(runs).hasSize(ITEMS);
      Set<String> expired = leaseExpiries(db);
      List<String> unexplained = new ArrayList<>();
      for (Map.Entry<String, List<Run>> e : runs.entrySet()) {
        List<Run> list = new ArrayList<>(e.getValue());
        list.sort(Comparator.comparingLong(Run::start));
        for (int i = 1; i < list.size(); i++) {
          Run before = list.get(i - 1);
          Run after = list.get(i);
          assertThat(after.generation()).isGreaterThan(before.generation());
          boolean overlapping = after.start() < before.end();
          if (overlapping && !expired.contains(e.getKey() + ":" + before.generation())) {
            unexplained.add(e.getKey() + " " + before + " / " + after);
          }
        }
        if (overlaps.contains(e.getKey())
            && expired.stream().noneMatch(x -> x.startsWith(e.getKey() + ":"))) {
          unexplained.add(e.getKey() + " ran concurrently");
        }
      }
      assertThat(unexplained)
          .as("runs of one item that overlapped without a lease expiry")
          .isEmpty();
      long workersUsed =
          runs.values().stream().flatMap(List::stream).map(Run::worker).distinct().count();
      assertThat(workersUsed).isGreaterThanOrEqualTo(2);
    }
  }

  private static Set<String> leaseExpiries(TestDatabase db) throws Exception {
    Set<String> out = new HashSet<>();
    try (Connection c = db.connection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT work_id, generation FROM "
                    + db.schema()
                    + ".attempt WHERE ending = 'lease_expired'")) {
      while (rs.next()) {
        out.add(rs.getString(1) + ":" + rs.getLong(2));
      }
    }
    return out;
  }
}
