package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import dev.relay.internal.runtime.VirtualThreads;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Handlers on virtual threads ({@link Relay.Builder#virtualThreads}). The lease, heartbeat,
 * cancellation, limit, timeout and shutdown tests run on virtual threads too, when .ci/run runs
 * them on a Java 25 JDK with {@code -Drelay.test.virtualThreads=true} ({@link RelayFixture}).
 */
@RelayDatabaseTest
class RelayVirtualThreadsTest {

  @Test
  void onAJvmWithoutVirtualThreadsTheSettingIsRefusedByName(TestDatabase db) {
    assumeThat(Runtime.version().feature()).as("a JVM before Java 21").isLessThan(21);
    assertThatThrownBy(
            () ->
                Relay.builder(db.dataSource())
                    .handle("k", claim -> Outcome.done())
                    .virtualThreads(true)
                    .build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("virtualThreads")
        .hasMessageContaining("Java 21");
  }

  @Test
  void virtualThreadsAndAnExecutorOfTheCallersAreRefusedTogether(TestDatabase db) {
    assertThatThrownBy(
            () ->
                Relay.builder(db.dataSource())
                    .handle("k", claim -> Outcome.done())
                    .executor(Executors.newSingleThreadExecutor())
                    .virtualThreads(true)
                    .build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("virtualThreads")
        .hasMessageContaining("executor");
  }

  @Test
  void handlersRunOnVirtualThreadsAndNeverMoreThanConcurrencyAtOnce(TestDatabase db) {
    assumeThat(VirtualThreads.available()).as("a JVM with virtual threads").isTrue();
    int concurrency = 50;
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    ConcurrentHashMap<String, Boolean> virtual = new ConcurrentHashMap<>();
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .virtualThreads(true)
              .concurrency(concurrency)
              .handle(
                  "k",
                  claim -> {
                    int now = inFlight.incrementAndGet();
                    most.accumulateAndGet(now, Math::max);
                    virtual.put(claim.workId(), isVirtual(Thread.currentThread()));
                    TimeUnit.MILLISECONDS.sleep(20); // a receiver that takes a while to answer
                    inFlight.decrementAndGet();
                    return Outcome.done();
                  }));
      List<Work> works =
          IntStream.range(0, 400).mapToObj(i -> Work.of("w-" + i, "k", "{}")).toList();
      f.enqueue(works);

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> works.stream().allMatch(w -> "done".equals(f.state(w.workId()))));
    }
    assertThat(virtual).hasSize(400).doesNotContainValue(false);
    assertThat(most.get()).isBetween(2, concurrency);
  }

  private static boolean isVirtual(Thread t) {
    try {
      return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
    } catch (ReflectiveOperationException e) {
      return false;
    }
  }
}
