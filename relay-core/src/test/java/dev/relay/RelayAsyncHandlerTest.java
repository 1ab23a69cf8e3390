package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * {@link AsyncHandler} (issue 24): an attempt holds a handler slot, not a thread, until its stage
 * completes; leases are renewed meanwhile, and a lost lease, the max run time and the end of the
 * shutdown grace cancel the stage, recorded as a synchronous handler's stop would be.
 */
@RelayDatabaseTest
class RelayAsyncHandlerTest {
  /** A backoff no test waits for. */
  private static final KindPolicy SLOW_BACKOFF =
      KindPolicy.DEFAULT.withBackoff(Duration.ofMinutes(5), Duration.ofHours(1));

  /** Attempts in flight: stages started and not yet completed, with the most seen at once. */
  private static final class InFlight {
    final Queue<CompletableFuture<Outcome>> open = new ConcurrentLinkedQueue<>();
    final AtomicInteger now = new AtomicInteger();
    final AtomicInteger most = new AtomicInteger();

    AsyncHandler handler() {
      return claim -> {
        CompletableFuture<Outcome> f = new CompletableFuture<>();
        most.accumulateAndGet(now.incrementAndGet(), Math::max);
        // Left as the stage completes when the runtime cancels it; completeAll leaves first: a
        // callback registered here runs after the runtime's own (registered later, run first),
        // which frees the slot, so counting here would see the next attempt start first.
        f.whenComplete((o, e) -> leave(f));
        open.add(f);
        return f;
      };
    }

    /** Completes every open stage with done. */
    void completeAll() {
      for (CompletableFuture<Outcome> f = open.poll(); f != null; f = open.poll()) {
        leave(f);
        f.complete(Outcome.done());
      }
    }

    private final Set<CompletableFuture<Outcome>> left = ConcurrentHashMap.newKeySet();

    /** Counts {@code f} out of flight, once. */
    private void leave(CompletableFuture<Outcome> f) {
      if (left.add(f)) {
        now.decrementAndGet();
      }
    }
  }

  @Test
  void concurrencyCountsAttemptsInFlightNotThreads(TestDatabase db) {
    InFlight flight = new InFlight();
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(IntStream.range(0, 50).mapToObj(i -> Work.of("w" + i, "a", "{}")).toList());
      f.start(f.builder().workerId("async-1").concurrency(40).handle("a", flight.handler()));

      await().atMost(RelayFixture.PATIENCE).until(() -> flight.now.get() == 40);
      // Forty calls in flight, on a pool of a few threads (all this worker's handlers are async).
      long threads =
          Thread.getAllStackTraces().keySet().stream()
              .filter(t -> t.getName().startsWith("relay-handler-async-1"))
              .count();
      int expected =
          RelayFixture.VIRTUAL_THREADS
              ? 40
              : Math.min(40, Math.max(2, 2 * Runtime.getRuntime().availableProcessors()));
      assertThat(threads).isLessThanOrEqualTo(expected);

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () -> {
                flight.completeAll();
                return f.count("state = 'done'") == 50;
              });
      assertThat(flight.most).hasValueLessThanOrEqualTo(40);
    }
  }

  @Test
  void aKindsLimitHoldsForAttemptsInFlight(TestDatabase db) {
    InFlight flight = new InFlight();
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(IntStream.range(0, 6).mapToObj(i -> Work.of("w" + i, "a", "{}")).toList());
      f.start(
          f.builder()
              .concurrency(20)
              .handle(
                  "a",
                  KindPolicy.DEFAULT.withLimits(new FlowLimits(2, null, null, null)),
                  flight.handler()));

      await().atMost(RelayFixture.PATIENCE).until(() -> flight.now.get() == 2);
      assertThat(f.count("state = 'running'")).isEqualTo(2);
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () -> {
                flight.completeAll();
                return f.count("state = 'done'") == 6;
              });
      assertThat(flight.most).hasValueLessThanOrEqualTo(2);
    }
  }

  @Test
  void outcomesOfStagesAreRecordedAndFailuresAreUnknown(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Map<String, AsyncHandler> byId = new ConcurrentHashMap<>();
      byId.put("ok", claim -> CompletableFuture.completedFuture(Outcome.done("ref-ok")));
      byId.put("later", claim -> CompletableFuture.supplyAsync(() -> Outcome.done("ref-later")));
      byId.put("failed", claim -> CompletableFuture.failedFuture(new IOException("refused")));
      byId.put(
          "thrown",
          claim -> {
            throw new IOException("no connection");
          });
      byId.put("null-stage", claim -> null);
      byId.put("null-outcome", claim -> CompletableFuture.completedFuture(null));
      f.enqueue(byId.keySet().stream().map(id -> Work.of(id, "a", "{}")).toList());
      f.start(
          f.builder()
              .handle("a", SLOW_BACKOFF, (AsyncHandler) c -> byId.get(c.workId()).handleAsync(c)));

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("state = 'done' OR attempts = 1 AND state = 'ready'") == 6);
      assertThat(f.row("ok"))
          .containsEntry("state", "done")
          .containsEntry("receiver_ref", "ref-ok");
      assertThat(f.row("later"))
          .containsEntry("state", "done")
          .containsEntry("receiver_ref", "ref-later");
      for (String id : List.of("failed", "thrown", "null-stage", "null-outcome")) {
        assertThat(f.attempts(id)).as(id).containsExactly("1 retry exception unknown");
      }
      assertThat(f.column("failed", "last_error")).contains("refused");
      assertThat(f.column("thrown", "last_error")).contains("no connection");
    }
  }

  @Test
  void aLostLeaseCancelsTheStage(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      CompletableFuture<Outcome> stage = new CompletableFuture<>();
      f.start(
          f.builder()
              .lease(Duration.ofSeconds(5))
              .renewInterval(Duration.ofMillis(200))
              .listener(events)
              .handle("a", (AsyncHandler) claim -> stage));
      f.enqueue(Work.of("w", "a", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      // Another generation takes the row over behind this worker's back.
      db.execute(
          "UPDATE {schema}.outbox SET claim_generation = claim_generation + 1,"
              + " claimed_by = 'intruder' WHERE work_id = 'w'");

      await().atMost(RelayFixture.PATIENCE).until(stage::isCancelled);
      assertThat(events.events).contains("stale w renew 1");
      // The cancelled attempt's write is refused by the guard: the row stays the intruder's.
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("stale w retry 1") == 1);
      assertThat(f.row("w"))
          .containsEntry("claimed_by", "intruder")
          .containsEntry("state", "running");
    }
  }

  @Test
  void aStagePastTheMaxRunTimeIsCancelledAndRecordedAsATimeout(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      CompletableFuture<Outcome> stage = new CompletableFuture<>();
      f.start(
          f.builder()
              .listener(events)
              .handle(
                  "a",
                  SLOW_BACKOFF.withMaxRunTime(Duration.ofMillis(500)),
                  (AsyncHandler) claim -> stage));
      f.enqueue(Work.of("w", "a", "{}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> f.attempts("w").size() == 1);
      assertThat(stage.isCancelled()).isTrue();
      assertThat(events.events).contains("timedOut w");
      assertThat(f.attempts("w")).containsExactly("1 retry timeout unknown");
      assertThat(f.row("w")).containsEntry("state", "ready").containsEntry("claimed_by", null);
    }
  }

  @Test
  void closeCancelsAStageStillInFlightAfterTheGraceAndRecordsTheShutdown(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      CompletableFuture<Outcome> stage = new CompletableFuture<>();
      Relay relay =
          f.start(
              f.builder()
                  .lease(Duration.ofSeconds(60))
                  .shutdownGrace(Duration.ofMillis(200))
                  .listener(events)
                  .handle("a", SLOW_BACKOFF, (AsyncHandler) claim -> stage));
      f.enqueue(Work.of("w", "a", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started w") == 1);

      relay.close();

      assertThat(stage.isCancelled()).isTrue();
      assertThat(f.attempts("w")).containsExactly("1 retry shutdown unknown");
      assertThat(f.row("w")).containsEntry("state", "ready").containsEntry("claimed_by", null);
    }
  }

  @Test
  void aHandlerThatIsBothBatchAndAsyncIsRefused(TestDatabase db) {
    abstract class Both implements BatchHandler, AsyncHandler {
      @Override
      public Outcome handle(Claim claim) {
        return Outcome.done();
      }
    }
    Both both =
        new Both() {
          @Override
          public List<Outcome> handleAll(List<? extends Claim> claims) {
            return List.of();
          }

          @Override
          public CompletableFuture<Outcome> handleAsync(Claim claim) {
            return CompletableFuture.completedFuture(Outcome.done());
          }
        };
    try (RelayFixture f = new RelayFixture(db)) {
      assertThatThrownBy(() -> f.builder().handle("a", both).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("kind a")
          .hasMessageContaining("BatchHandler and an AsyncHandler");
    }
  }
}
