package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

@RelayDatabaseTest
class RelayShutdownTest {

  @Test
  void closeReleasesUnstartedWorkAtOnceAndWaitsForTheRunningHandler(TestDatabase db) {
    CountDownLatch finishSlow = new CountDownLatch(1);
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      // A one-minute lease: the released work can only be taken this fast because it was released.
      Relay a =
          f.start(
              f.builder(db.newDataSource("relay-a", 4))
                  .workerId("a")
                  .concurrency(1)
                  .bufferSize(5)
                  .batchSize(10)
                  .shutdownGrace(Duration.ofSeconds(60))
                  .listener(eventsA)
                  .handle(
                      "job",
                      claim -> {
                        if (!claim.workId().equals("warm-up")) {
                          finishSlow.await(60, TimeUnit.SECONDS);
                        }
                        return Outcome.done("by-" + claim.workerId());
                      }));
      // The buffer a worker holds follows how long its handlers take (bufferSize is a ceiling):
      // one quick item first, so that a fills its buffer of 5 while a-slow runs.
      f.enqueue(Work.of("warm-up", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("warm-up")));
      f.enqueue(
          Work.of("a-slow", "job", "{}"),
          Work.of("b-1", "job", "{}"),
          Work.of("b-2", "job", "{}"),
          Work.of("b-3", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("claimed") == 5);
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started a-slow") == 1);

      CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);

      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("released") == 3);
      assertThat(f.count("work_id LIKE 'b-%' AND state = 'ready' AND claimed_by IS NULL"))
          .isEqualTo(3);
      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .handle("job", claim -> Outcome.done("by-" + claim.workerId())));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> f.count("work_id LIKE 'b-%' AND state = 'done'") == 3);
      assertThat(f.count("work_id LIKE 'b-%' AND receiver_ref = 'by-b'")).isEqualTo(3);
      assertThat(f.state("a-slow")).isEqualTo("running");
      assertThat(closing).isNotDone();

      finishSlow.countDown();
      await().atMost(RelayFixture.PATIENCE).until(closing::isDone);
      assertThat(f.row("a-slow"))
          .containsEntry("state", "done")
          .containsEntry("receiver_ref", "by-a");
      // Released, not failed: the release gave the attempt back.
      assertThat(f.row("b-1")).containsEntry("attempts", "1");
    }
  }

  @Test
  void closeLeavesAHandlerStillRunningAfterTheGracePeriodToItsLease(TestDatabase db) {
    CountDownLatch finishHung = new CountDownLatch(1);
    CountDownLatch lateReturned = new CountDownLatch(1);
    AtomicReference<Claim.StopReason> stopReason = new AtomicReference<>();
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      Relay a =
          f.start(
              f.builder(db.newDataSource("relay-a", 4))
                  .workerId("a")
                  .lease(Duration.ofSeconds(3))
                  .renewInterval(Duration.ofMillis(300))
                  .shutdownGrace(Duration.ofMillis(500))
                  .listener(eventsA)
                  .handle(
                      "job",
                      KindPolicy.DEFAULT.withMaxRunTime(Duration.ofMillis(2500)),
                      claim -> {
                        try {
                          while (true) {
                            try {
                              if (finishHung.await(60, TimeUnit.SECONDS)) {
                                stopReason.set(claim.stopReason());
                                return Outcome.done("late");
                              }
                            } catch (InterruptedException ignored) {
                              // a call that does not answer interrupts
                            }
                          }
                        } finally {
                          lateReturned.countDown();
                        }
                      }));
      f.enqueue(Work.of("w", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started w") == 1);

      // close() returns although the handler never does.
      CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);
      await().atMost(RelayFixture.PATIENCE).until(closing::isDone);
      // Not released, not written: the claim is left to its lease, no longer renewed.
      assertThat(f.row("w")).containsEntry("state", "running").containsEntry("claimed_by", "a");
      assertThat(f.attempts("w")).isEmpty();

      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(Duration.ofSeconds(3))
              .listener(eventsB)
              .handle("job", claim -> Outcome.done("taken-over")));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      // The claim was never released while its call might be in flight: it expired.
      assertThat(eventsB.events).contains("reclaimed w a");
      assertThat(f.attempts("w")).containsExactly("1 lease_expired lease_expired unknown");
      assertThat(eventsA.events).doesNotContain("released w");
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "taken-over")
          .containsEntry("claim_generation", "2");

      // The stuck handler returns at last: relay a is closed, so its outcome is never written.
      finishHung.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> lateReturned.getCount() == 0);
      assertThat(stopReason.get()).isEqualTo(Claim.StopReason.SHUTDOWN);
      assertThat(f.row("w"))
          .containsEntry("state", "done")
          .containsEntry("receiver_ref", "taken-over")
          .containsEntry("claim_generation", "2");
      assertThat(f.attempts("w")).containsExactly("1 lease_expired lease_expired unknown");
      assertThat(eventsA.events).doesNotContain("completed w");
    }
  }

  @Test
  void closeReturnsWithinItsBoundWhileTheDatabaseHangsAndNothingIsSentAfterwards(TestDatabase db)
      throws Exception {
    Duration grace = Duration.ofSeconds(1);
    CountDownLatch finish = new CountDownLatch(1);
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      PGSimpleDataSource viaProxy = new PGSimpleDataSource();
      viaProxy.setUrl(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      Relay a =
          f.start(
              f.builder(viaProxy)
                  .workerId("a")
                  .lease(Duration.ofSeconds(3))
                  .shutdownGrace(grace)
                  .listener(eventsA)
                  .handle(
                      "job",
                      claim -> {
                        finish.await(60, TimeUnit.SECONDS);
                        return Outcome.done("by-a");
                      }));
      f.enqueue(Work.of("w", "job", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> eventsA.count("started w") == 1);

      proxy.stall(true); // the database hangs for worker a
      finish.countDown(); // its outcome now waits for a database that does not answer

      long start = System.nanoTime();
      a.close();
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      long bytesAtClose = proxy.bytesFromClients();
      int connectionsAtClose = proxy.connectionsAccepted();
      assertThat(took).isLessThanOrEqualTo(grace.plusSeconds(2));

      // Another worker takes the work over once a's lease ends; meanwhile nothing of a's may move.
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(Duration.ofSeconds(3))
              .listener(eventsB)
              .handle("job", claim -> Outcome.done("by-b")));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("receiver_ref", "by-b")
          .containsEntry("claim_generation", "2");
      assertThat(eventsB.events).contains("reclaimed w a");
      assertThat(proxy.bytesFromClients()).isEqualTo(bytesAtClose);
      assertThat(proxy.connectionsAccepted()).isEqualTo(connectionsAtClose);
      assertThat(eventsA.events).doesNotContain("completed w");
      proxy.stall(false);
    }
  }
}
