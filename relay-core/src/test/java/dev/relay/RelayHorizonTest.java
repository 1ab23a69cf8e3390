package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, end to end with two Relay instances: a worker stops after the receiver accepted (here
 * its handler hangs past its run time, so its lease is no longer renewed), and another worker finds
 * the expired lease only after the kind's deduplication horizon. It must not call the receiver
 * again: the claim fails the work with {@code horizon_passed}.
 */
@RelayDatabaseTest
class RelayHorizonTest {
  private static final Duration LEASE = Duration.ofSeconds(2);
  private static final Duration HORIZON = Duration.ofSeconds(4);

  @Test
  void aTakeoverAfterTheHorizonDoesNotCallTheReceiverAgain(TestDatabase db) throws Exception {
    KindPolicy policy =
        KindPolicy.DEFAULT
            .withDedupHorizon(HORIZON)
            .withMaxElapsed(HORIZON)
            .withMaxRunTime(Duration.ofMillis(500));
    AtomicInteger calls = new AtomicInteger();
    CountDownLatch release = new CountDownLatch(1);
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      f.start(
          f.builder(db.newDataSource("relay-a", 4))
              .workerId("a")
              .lease(LEASE)
              .renewInterval(Duration.ofMillis(250))
              .concurrency(1) // its one slot stays busy: A cannot take the work over itself
              .bufferSize(0)
              .handle(
                  "publish",
                  policy,
                  claim -> {
                    calls.incrementAndGet(); // the receiver accepted
                    // and the worker is gone: nothing it does reaches the database again
                    awaitIgnoringInterrupts(release);
                    return Outcome.done("late");
                  }));
      f.enqueue(Work.of("w", "publish", "{}"));
      // A's lease has run out, and so has the horizon, on the database clock.
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  Rows.count(
                          db.dataSource(),
                          db.schema(),
                          "SELECT count(*) FROM {schema}.work WHERE work_id = 'w'"
                              + " AND lease_until < clock_timestamp()"
                              + " AND first_attempt_at + interval '4 seconds' < clock_timestamp()")
                      == 1);

      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(LEASE)
              .listener(eventsB)
              .handle(
                  "publish", policy, claim -> Outcome.done("again-" + calls.incrementAndGet())));

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> eventsB.count("retired w failed horizon_passed") == 1);
      assertThat(calls).hasValue(1);
      assertThat(f.row("w"))
          .containsEntry("state", "failed")
          .containsEntry("last_error_kind", "horizon_passed")
          .containsEntry("outcome", "unknown")
          .containsEntry("claim_generation", "1");
      assertThat(f.attempts("w")).hasSize(2).first().asString().startsWith("1 lease_expired");
      release.countDown();
    }
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    while (true) {
      try {
        if (latch.await(60, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        // a dead worker hears nothing
        continue;
      }
      return;
    }
  }
}
