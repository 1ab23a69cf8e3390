package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Long-running work on heartbeats: a short lease, renewed while the handler runs. */
@RelayDatabaseTest
class RelayHeartbeatTest {
  private static final Duration LEASE = Duration.ofSeconds(6);
  private static final Duration RUN = Duration.ofSeconds(20);

  /** The long job: runs for {@link #RUN} on the monotonic clock, or until told to stop. */
  private static Outcome longJob(Claim claim) throws InterruptedException {
    long end = System.nanoTime() + RUN.toNanos();
    while (System.nanoTime() - end < 0 && !claim.shouldStop()) {
      Thread.sleep(50); // the job's own work, not synchronisation
    }
    return Outcome.done(claim.shouldStop() ? "stopped" : "finished-" + claim.generation());
  }

  @Test
  void aHandlerThreeLeasesLongRunsOnceUnderOneGeneration(TestDatabase db) {
    AtomicInteger runs = new AtomicInteger();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      RelayFixture.Recorder other = new RelayFixture.Recorder();
      f.start(
          f.builder(db.newDataSource("relay-a", 4))
              .workerId("a")
              .lease(LEASE)
              .listener(events)
              .handle(
                  "report",
                  claim -> {
                    runs.incrementAndGet();
                    return longJob(claim);
                  }));
      f.enqueue(Work.of("r", "report", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started r") == 1);
      // A second worker that would take the work over if the lease ever lapsed.
      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(LEASE)
              .listener(other)
              .handle(
                  "report",
                  claim -> {
                    runs.incrementAndGet();
                    return Outcome.done("taken-over");
                  }));

      await().atMost(RelayFixture.PATIENCE.plus(RUN)).until(() -> "done".equals(f.state("r")));
      assertThat(f.row("r"))
          .containsEntry("receiver_ref", "finished-1")
          .containsEntry("claim_generation", "1")
          .containsEntry("attempts", "1");
      assertThat(runs).hasValue(1);
      assertThat(f.attempts("r")).isEmpty();
      assertThat(events.events).noneMatch(e -> e.startsWith("stale") || e.startsWith("timedOut"));
      assertThat(other.events).noneMatch(e -> e.endsWith(" r") || e.contains(" r "));
    }
  }

  @Test
  void aWorkerCutOffFromPostgresIsToldAtOnceAndTheWorkIsTakenOverNoEarlierThanItsLease(
      TestDatabase db) throws Exception {
    AtomicReference<Claim.StopReason> stopReason = new AtomicReference<>();
    AtomicLong stoppedAt = new AtomicLong();
    AtomicReference<Claim> firstClaim = new AtomicReference<>();
    AtomicLong takenOverAt = new AtomicLong();
    CountDownLatch stopped = new CountDownLatch(1);
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      PGSimpleDataSource viaProxy = new PGSimpleDataSource();
      viaProxy.setUrl(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      f.start(
          f.builder(viaProxy)
              .workerId("a")
              .lease(LEASE)
              .notifications(false)
              .listener(eventsA)
              .handle(
                  "report",
                  claim -> {
                    firstClaim.set(claim);
                    claim.onStop(
                        () -> {
                          stoppedAt.set(System.nanoTime());
                          stopReason.set(claim.stopReason());
                          stopped.countDown();
                        });
                    return longJob(claim);
                  }));
      f.enqueue(Work.of("r", "report", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started r") == 1);
      String claimedUntil = f.column("r", "lease_until");
      // At least one heartbeat has landed: the stored lease moved.
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> !claimedUntil.equals(f.column("r", "lease_until")));

      proxy.stall(true); // a network partition: no refusal can reach worker a

      assertThat(stopped.await(RelayFixture.PATIENCE.toSeconds(), TimeUnit.SECONDS)).isTrue();
      assertThat(stopReason.get()).isEqualTo(Claim.StopReason.LEASE_LOST);
      assertThat(firstClaim.get().isLeaseLost()).isTrue();
      assertThat(firstClaim.get().leaseRemaining()).isZero();
      // Nothing of worker a reaches the database now: this is gen 1's last stored lease.
      String lastLease = f.column("r", "lease_until");

      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      eventsB.tap =
          e -> {
            if (e.equals("reclaimed r a")) {
              takenOverAt.set(System.nanoTime());
            }
          };
      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(LEASE)
              .listener(eventsB)
              .handle("report", claim -> Outcome.done("taken-over-" + claim.generation())));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("r")));

      assertThat(f.row("r"))
          .containsEntry("receiver_ref", "taken-over-2")
          .containsEntry("claim_generation", "2");
      // On the database clock: generation 2 was claimed no earlier than gen 1's lease ended.
      assertThat(
              db.queryString(
                  "SELECT (claimed_at >= '"
                      + lastLease
                      + "'::timestamptz)::text FROM {schema}.work WHERE work_id = 'r'"))
          .isEqualTo("true");
      // And worker a knew before anyone could take the work over.
      assertThat(takenOverAt.get() - stoppedAt.get()).isPositive();
      proxy.stall(false);
    }
  }
}
