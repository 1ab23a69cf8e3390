package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * A handler still running when the shutdown grace ends, interrupted, that returns before {@code
 * close()} ends. One that ignores the interrupt: {@link RelayShutdownTest}.
 */
@RelayDatabaseTest
class RelayShutdownInterruptTest {
  /** A backoff no test waits for: a retry that is claimable at once did not take it. */
  private static final KindPolicy SLOW_BACKOFF =
      KindPolicy.DEFAULT.withBackoff(Duration.ofMinutes(5), Duration.ofHours(1));

  /** What the blocking handler saw when it was stopped. */
  private static final class Seen {
    final AtomicReference<String> stopReason = new AtomicReference<>();
    final AtomicBoolean stopActionRan = new AtomicBoolean();
  }

  /** A handler that waits for a call that never answers, and answers interrupts. */
  private static Handler blocking(Seen seen) {
    return claim -> {
      claim.onStop(() -> seen.stopActionRan.set(true));
      try {
        new CountDownLatch(1).await(60, TimeUnit.SECONDS);
        return Outcome.done("never");
      } finally {
        seen.stopReason.set(String.valueOf(claim.stopReason()));
      }
    };
  }

  private static Relay startBlocking(
      RelayFixture f, TestDatabase db, KindPolicy policy, Seen seen, RelayFixture.Recorder events) {
    // A one-minute lease: work claimable again before it ends was not left to the lease.
    return f.start(
        f.builder(db.newDataSource("relay-a", 4))
            .workerId("a")
            .lease(Duration.ofSeconds(60))
            .shutdownGrace(Duration.ofMillis(200))
            .listener(events)
            .handle("job", policy, blocking(seen)));
  }

  @Test
  void aHandlerInterruptedByShutdownIsRecordedAsShutdownAndIsClaimableAtOnce(TestDatabase db) {
    Seen seen = new Seen();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      Relay a = startBlocking(f, db, SLOW_BACKOFF, seen, eventsA);
      f.enqueue(Work.of("w", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started w") == 1);

      a.close();

      // Its own ending: a retry whose error kind says the worker shut down, effect unknown.
      assertThat(f.attempts("w")).containsExactly("1 retry shutdown unknown");
      assertThat(f.row("w"))
          .containsEntry("state", "ready")
          .containsEntry("claimed_by", null)
          .containsEntry("attempts", "1")
          .containsEntry("last_error_kind", "shutdown")
          .containsEntry("outcome", "unknown");
      assertThat(f.column("w", "last_error")).contains("shut down").contains("Interrupted");
      // No backoff (5 minutes for this kind): the failure was the worker's, not the receiver's.
      assertThat(f.count("work_id = 'w' AND available_at <= clock_timestamp()")).isEqualTo(1);
      assertThat(eventsA.events).contains("retried w shutdown").doesNotContain("released w");
      // The handler was told why it was stopped, before the interrupt.
      assertThat(seen.stopReason.get()).isEqualTo("SHUTDOWN");
      assertThat(seen.stopActionRan).isTrue();

      // Another worker takes it now, long before a's lease (one minute) would have ended.
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .listener(eventsB)
              .handle("job", SLOW_BACKOFF, claim -> Outcome.done("by-b")));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "by-b")
          .containsEntry("attempts", "2")
          .containsEntry("claim_generation", "2");
      assertThat(eventsB.events).doesNotContain("reclaimed w a");
    }
  }

  @Test
  void aKindThatParksUnknownOutcomesParksWorkInterruptedByShutdown(TestDatabase db) {
    Seen seen = new Seen();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      Relay a =
          startBlocking(
              f, db, SLOW_BACKOFF.withUnknownOutcome(UnknownOutcomePolicy.park()), seen, eventsA);
      f.enqueue(Work.of("w", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started w") == 1);

      a.close();

      // The call may have happened: the kind's policy for an unknown outcome still decides.
      assertThat(f.attempts("w")).containsExactly("1 failed shutdown unknown");
      assertThat(f.row("w"))
          .containsEntry("state", "failed")
          .containsEntry("attempts", "1")
          .containsEntry("last_error_kind", "shutdown")
          .containsEntry("outcome", "unknown");
    }
  }
}
