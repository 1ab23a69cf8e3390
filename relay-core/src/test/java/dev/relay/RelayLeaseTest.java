package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class RelayLeaseTest {
  private static final Duration LEASE = Duration.ofSeconds(2);
  private static final Duration RENEW = Duration.ofMillis(250);

  @Test
  void hungHandlerIsTakenOverAfterItsLeaseAndItsLateOutcomeIsRefused(TestDatabase db) {
    CountDownLatch unblock = new CountDownLatch(1);
    AtomicBoolean sawInterrupt = new AtomicBoolean();
    KindPolicy policy = KindPolicy.DEFAULT.withMaxRunTime(Duration.ofMillis(700));
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      f.start(
          f.builder(db.newDataSource("relay-a", 4))
              .workerId("a")
              .lease(LEASE)
              .renewInterval(RENEW)
              .concurrency(1)
              .bufferSize(0)
              .listener(eventsA)
              .handle(
                  "hang",
                  policy,
                  claim -> {
                    if (claim.generation() == 1) {
                      awaitIgnoringInterrupts(unblock, sawInterrupt);
                      return Outcome.done("late-" + claim.generation());
                    }
                    return Outcome.done("fresh-" + claim.generation());
                  }));
      f.enqueue(Work.of("w", "hang", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started w") == 1);

      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(LEASE)
              .renewInterval(RENEW)
              .listener(eventsB)
              .handle("hang", policy, claim -> Outcome.done("fresh-" + claim.generation())));

      // A stops renewing after the timeout; once the lease ends, B takes over with generation 2.
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "fresh-2")
          .containsEntry("claim_generation", "2");
      assertThat(eventsA.events).contains("timedOut w");
      assertThat(eventsB.events).contains("reclaimed w a");
      await().atMost(RelayFixture.PATIENCE).until(sawInterrupt::get);

      // The hung attempt returns late: its done is refused and changes nothing.
      unblock.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("stale w complete 1") == 1);
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "fresh-2")
          .containsEntry("claim_generation", "2")
          .containsEntry("state", "done");
      assertThat(f.attempts("w"))
          .containsExactly(
              "1 lease_expired lease_expired unknown", "1 stale_write stale_complete null");
    }
  }

  @Test
  void refusedRenewalMarksTheClaimStaleAndTellsTheHandlerToStop(TestDatabase db) throws Exception {
    AtomicReference<Claim.StopReason> reason = new AtomicReference<>();
    CountDownLatch stopped = new CountDownLatch(1);
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .lease(Duration.ofSeconds(5))
              .renewInterval(RENEW)
              .listener(events)
              .handle(
                  "long",
                  (Claim claim) -> {
                    if (claim.generation() > 1) {
                      return Outcome.done("again");
                    }
                    claim.onStop(stopped::countDown);
                    if (stopped.await(60, TimeUnit.SECONDS)) {
                      reason.set(claim.stopReason());
                    }
                    return Outcome.done("first");
                  }));
      f.enqueue(Work.of("w", "long", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      // Another generation takes the row over behind this worker's back.
      db.execute(
          "UPDATE {schema}.outbox SET claim_generation = claim_generation + 1,"
              + " claimed_by = 'intruder' WHERE work_id = 'w'");

      await().atMost(RelayFixture.PATIENCE).until(() -> reason.get() != null);
      assertThat(reason.get()).isEqualTo(Claim.StopReason.LEASE_LOST);
      assertThat(events.events).contains("stale w renew 1");
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("stale w complete 1") == 1);
      assertThat(f.row("w"))
          .containsEntry("claimed_by", "intruder")
          .containsEntry("state", "running");
    }
  }

  @Test
  void runningClaimsAreRenewedInOneTransactionWhileTheirHandlersRun(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .lease(Duration.ofSeconds(3))
              .renewInterval(Duration.ofMillis(200))
              .handle(
                  "steady",
                  claim -> {
                    // The handler's work: run until it has seen its lease move forward twice.
                    java.time.Instant first = claim.leaseUntil();
                    java.time.Instant seen = first;
                    int moves = 0;
                    while (moves < 2 && !claim.shouldStop()) {
                      Thread.sleep(20);
                      if (!claim.leaseUntil().equals(seen)) {
                        seen = claim.leaseUntil();
                        moves++;
                      }
                    }
                    return Outcome.done(moves == 2 && seen.isAfter(first) ? "renewed" : "stopped");
                  }));
      f.enqueue(Work.of("a", "steady", "{}"), Work.of("b", "steady", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state = 'done'") == 2);
      assertThat(f.column("a", "receiver_ref")).isEqualTo("renewed");
      assertThat(f.column("b", "receiver_ref")).isEqualTo("renewed");
      assertThat(f.attempts("a")).isEmpty();
      assertThat(f.attempts("b")).isEmpty();
    }
  }

  @Test
  void anOutcomeWaitingToBeRecordedKeepsItsLeaseUntilRecorded(TestDatabase db) throws Exception {
    CountDownLatch xBeingRecorded = new CountDownLatch(1);
    CountDownLatch wBeingRecorded = new CountDownLatch(1);
    CountDownLatch letRecordingGoOn = new CountDownLatch(1);
    CountDownLatch secondReturned = new CountDownLatch(1);
    try (RelayFixture f = new RelayFixture(db)) {
      // Slow steps of the completer (here its listener calls for x and w, one on each of its two
      // writers) hold back y's outcome, which waits in the completer's queue for longer than a
      // lease.
      List<String> staleWrites = new CopyOnWriteArrayList<>();
      RelayEventListener slowCompleter =
          new RelayEventListener() {
            @Override
            public void stale(Claim claim, String operation) {
              staleWrites.add(claim.workId() + " " + operation + " " + claim.generation());
            }

            @Override
            public void completed(Claim claim) {
              if (claim.workId().equals("x") || claim.workId().equals("w")) {
                (claim.workId().equals("x") ? xBeingRecorded : wBeingRecorded).countDown();
                try {
                  letRecordingGoOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            }
          };
      f.start(
          f.builder()
              .lease(LEASE)
              .renewInterval(RENEW)
              .concurrency(3)
              .listener(slowCompleter)
              .handle(
                  "quick",
                  claim -> {
                    if (claim.workId().equals("w")) {
                      xBeingRecorded.await(60, TimeUnit.SECONDS); // the other writer takes w
                    }
                    if (claim.workId().equals("y")) {
                      wBeingRecorded.await(60, TimeUnit.SECONDS); // both writers are held
                      secondReturned.countDown();
                    }
                    return Outcome.done("ref-" + claim.workId() + "-" + claim.generation());
                  }));
      f.enqueue(
          Work.of("x", "quick", "{}"), Work.of("w", "quick", "{}"), Work.of("y", "quick", "{}"));
      assertThat(secondReturned.await(60, TimeUnit.SECONDS)).isTrue();
      String leaseWhenReturned = f.column("y", "lease_until");

      // A full lease passes on the database clock while y's outcome waits to be recorded.
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  "true"
                      .equals(
                          db.queryString(
                              "SELECT (clock_timestamp() > '"
                                  + leaseWhenReturned
                                  + "'::timestamptz + interval '"
                                  + LEASE.toMillis()
                                  + " milliseconds')::text")));
      letRecordingGoOn.countDown();

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("y")));
      assertThat(f.row("y"))
          .containsEntry("receiver_ref", "ref-y-1")
          .containsEntry("claim_generation", "1")
          .containsEntry("attempts", "1");
      assertThat(f.attempts("y")).isEmpty();
      assertThat(staleWrites).isEmpty();
    }
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch, AtomicBoolean sawInterrupt) {
    while (true) {
      try {
        if (latch.await(60, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        sawInterrupt.set(true); // a hung call that does not answer interrupts
      }
    }
  }
}
