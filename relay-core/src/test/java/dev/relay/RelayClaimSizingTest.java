package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Claims are sized from free capacity, bounded by what can start within the lease: a worker whose
 * handlers take longer than {@code lease − startMargin} holds no claim beyond its handler slots, at
 * the default (ceiling) {@code bufferSize}. Holding more would only keep work from other workers
 * until the start margin released it unrun.
 */
@RelayDatabaseTest
class RelayClaimSizingTest {
  private static final Duration WORK = Duration.ofSeconds(3);

  @Test
  void slowHandlersHoldNothingTheyCannotStartWithinTheLease(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Held held = new Held();
      f.start(
          f.builder()
              .concurrency(2)
              .lease(Duration.ofSeconds(6))
              .startMargin(Duration.ofSeconds(4)) // 2 s to start: less than one attempt
              .renewInterval(Duration.ofSeconds(2))
              .listener(held)
              .handle(
                  "slow",
                  claim -> {
                    Thread.sleep(WORK.toMillis()); // the work itself, not a synchronisation
                    return Outcome.done();
                  }));
      // Two attempts teach the worker how long its handlers take.
      f.enqueue(Work.of("first-1", "slow", "{}"), Work.of("first-2", "slow", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state = 'done'") == 2);

      held.max.set(0);
      List<Work> more = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        more.add(Work.of("then-" + i, "slow", "{}"));
      }
      f.enqueue(more);
      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state = 'done'") == 8);

      assertThat(held.max.get()).as("claims held at once (2 handler slots)").isEqualTo(2);
      assertThat(held.released.get()).as("claims released unrun by the start margin").isZero();
    }
  }

  /** Tracks how many claims the worker holds (claimed, outcome not yet reported). */
  private static final class Held implements RelayEventListener {
    final AtomicInteger now = new AtomicInteger();
    final AtomicInteger max = new AtomicInteger();
    final AtomicInteger released = new AtomicInteger();

    @Override
    public void claimed(Claim claim) {
      max.accumulateAndGet(now.incrementAndGet(), Math::max);
    }

    @Override
    public void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {
      now.decrementAndGet();
    }

    @Override
    public void released(Claim claim) {
      released.incrementAndGet();
      now.decrementAndGet();
    }
  }
}
