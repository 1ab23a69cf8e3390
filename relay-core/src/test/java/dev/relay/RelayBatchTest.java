package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A {@link BatchHandler} under a real runtime: one handler slot is held by a call on the item
 * {@code gate} while the items under test are claimed into the buffer, so that the next call takes
 * them together.
 */
@RelayDatabaseTest
class RelayBatchTest {
  private static final KindPolicy FAST =
      KindPolicy.DEFAULT.withBackoff(Duration.ofMinutes(1), Duration.ofMinutes(5));

  @Test
  void bufferedClaimsOfABatchKindReachTheHandlerInOneCall(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h = new Gated(RelayFixture::done);
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      startHeld(f, h, FAST, events);
      List<String> ids = ids("b-", 10);
      f.enqueue(ids.stream().map(id -> Work.of(id, "pub", "{}")).toList());
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed b-") == 10);

      h.gate.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state = 'done'") == 11);
      // The first claimed was taken from the buffer while the slot was held; every claim
      // announced before the last was in the buffer when the slot freed: at least 9 in one call.
      assertThat(h.calls.stream().mapToInt(List::size).max().orElse(0)).isGreaterThanOrEqualTo(9);
      assertThat(h.handled()).containsExactlyInAnyOrderElementsOf(concat(List.of("gate"), ids));
      for (String id : ids) {
        assertThat(events.count("started " + id)).isEqualTo(1);
        assertThat(events.count("completed " + id)).isEqualTo(1);
        assertThat(f.row(id)).containsEntry("receiver_ref", "ref-" + id);
      }
    }
  }

  @Test
  void eachClaimOfABatchGetsItsOwnOutcome(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(
              c ->
                  switch (c.workId()) {
                    case "again" -> Outcome.retry("broker busy", Outcome.Effect.NOT_DELIVERED);
                    case "bad" -> Outcome.fail("too large", Outcome.Effect.NOT_DELIVERED);
                    default -> RelayFixture.done(c);
                  });
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      startHeld(f, h, FAST, events);
      f.enqueue(
          Work.of("ok", "pub", "{}"), Work.of("again", "pub", "{}"), Work.of("bad", "pub", "{}"));
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  events.count("claimed ok")
                          + events.count("claimed again")
                          + events.count("claimed bad")
                      == 3);

      h.gate.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state <> 'running'") == 4);
      assertThat(h.calls).anySatisfy(call -> assertThat(call).hasSizeGreaterThanOrEqualTo(2));
      assertThat(f.row("ok"))
          .containsEntry("state", "done")
          .containsEntry("receiver_ref", "ref-ok");
      assertThat(f.row("again"))
          .containsEntry("state", "ready")
          .containsEntry("attempts", "1")
          .containsEntry("outcome", "not_delivered");
      assertThat(f.row("bad"))
          .containsEntry("state", "failed")
          .containsEntry("last_error_kind", "permanent")
          .containsEntry("outcome", "not_delivered");
      assertThat(events.events).contains("retried again retry", "failed bad permanent");
    }
  }

  @Test
  void aThrowingBatchLeavesEveryClaimToTheUnknownOutcomePolicy(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(RelayFixture::done) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              if (claims.stream().anyMatch(c -> c.workId().startsWith("t-"))) {
                throw new java.net.SocketTimeoutException("broker read timed out");
              }
              return super.answer(claims);
            }
          };
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      startHeld(f, h, FAST.withUnknownOutcome(UnknownOutcomePolicy.park()), events);
      List<String> ids = ids("t-", 4);
      f.enqueue(ids.stream().map(id -> Work.of(id, "pub", "{}")).toList());
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed t-") == 4);

      h.gate.countDown();
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("work_id LIKE 't-%' AND state = 'failed'") == 4);
      for (String id : ids) {
        assertThat(f.row(id))
            .containsEntry("attempts", "1")
            .containsEntry("outcome", "unknown")
            .containsEntry("last_error_kind", "exception");
        assertThat(f.column(id, "last_error")).contains("broker read timed out");
      }
    }
  }

  @Test
  void aWrongSizedAnswerIsAnUnknownEffectForEveryClaimOfTheBatch(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(RelayFixture::done) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              List<Outcome> all = super.answer(claims);
              return all.size() > 1 ? all.subList(0, 1) : all;
            }
          };
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      startHeld(f, h, FAST.withUnknownOutcome(UnknownOutcomePolicy.park()), events);
      List<String> ids = ids("w-", 3);
      f.enqueue(ids.stream().map(id -> Work.of(id, "pub", "{}")).toList());
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed w-") == 3);

      h.gate.countDown();
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("work_id LIKE 'w-%' AND state <> 'running'") == 3);
      // The first two claimed were certainly buffered together (see the first test).
      List<String> batched =
          h.calls.stream().filter(call -> call.size() > 1).flatMap(List::stream).toList();
      assertThat(batched).hasSizeGreaterThanOrEqualTo(2);
      for (String id : batched) {
        assertThat(f.row(id)).containsEntry("state", "failed").containsEntry("outcome", "unknown");
        assertThat(f.column(id, "last_error")).contains("outcomes for " + h.sizeOfCallWith(id));
      }
    }
  }

  @Test
  void aStaleClaimInABatchHasOnlyItsOwnWriteRefused(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(RelayFixture::done) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              if (claims.stream().anyMatch(c -> c.workId().equals("s-1"))) {
                // Another generation takes s-1 over behind this worker's back, mid-batch.
                db.execute(
                    "UPDATE {schema}.outbox SET claim_generation = claim_generation + 1,"
                        + " claimed_by = 'intruder' WHERE work_id = 's-1'");
              }
              return super.answer(claims);
            }
          };
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      startHeld(f, h, FAST, events);
      f.enqueue(
          Work.of("s-1", "pub", "{}"), Work.of("s-2", "pub", "{}"), Work.of("s-3", "pub", "{}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed s-") == 3);

      h.gate.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("stale s-1 complete 1") == 1);
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("work_id IN ('s-2', 's-3') AND state = 'done'") == 2);
      assertThat(h.calls)
          .anySatisfy(call -> assertThat(call).contains("s-1").hasSizeGreaterThan(1));
      assertThat(f.row("s-1"))
          .containsEntry("claimed_by", "intruder")
          .containsEntry("state", "running")
          .containsEntry("claim_generation", "2");
      assertThat(f.row("s-2")).containsEntry("receiver_ref", "ref-s-2");
      assertThat(events.events).doesNotContain("stale s-2 complete 1", "stale s-3 complete 1");
    }
  }

  @Test
  void closeReleasesBufferedClaimsAndWaitsForTheRunningBatch(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      CountDownLatch finishBatch = new CountDownLatch(1);
      Gated h =
          new Gated(c -> Outcome.done("by-" + c.workerId())) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              if (claims.stream().anyMatch(c -> c.workId().startsWith("run-"))) {
                finishBatch.await(60, TimeUnit.SECONDS);
              }
              return super.answer(claims);
            }
          };
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      Relay a =
          startHeld(
              f,
              h,
              FAST,
              events,
              f.builder(db.newDataSource("relay-a", 4))
                  .workerId("a")
                  .shutdownGrace(Duration.ofSeconds(60)));
      f.enqueue(ids("run-", 3).stream().map(id -> Work.of(id, "pub", "{}")).toList());
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed run-") == 3);
      h.gate.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started run-") == 3);
      // The slot is held by the batch now: what comes next waits in the buffer.
      f.enqueue(ids("wait-", 2).stream().map(id -> Work.of(id, "pub", "{}")).toList());
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed wait-") == 2);

      CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("released wait-") == 2);
      assertThat(f.count("work_id LIKE 'wait-%' AND state = 'ready' AND claimed_by IS NULL"))
          .isEqualTo(2);
      assertThat(f.count("work_id LIKE 'run-%' AND state = 'running'")).isEqualTo(3);
      assertThat(closing).isNotDone();

      finishBatch.countDown();
      await().atMost(RelayFixture.PATIENCE).until(closing::isDone);
      for (String id : ids("run-", 3)) {
        assertThat(f.row(id)).containsEntry("state", "done").containsEntry("receiver_ref", "by-a");
      }
      // Released, not failed: the release gave the attempt back.
      assertThat(f.row("wait-0")).containsEntry("attempts", "0");
    }
  }

  @Test
  void aBatchStillRunningAfterTheGraceIsLeftToItsLeasesAndTakenOver(TestDatabase db) {
    CountDownLatch finishHung = new CountDownLatch(1);
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(c -> Outcome.done("late")) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              if (claims.stream().anyMatch(c -> c.workId().startsWith("run-"))) {
                while (true) {
                  try {
                    if (finishHung.await(60, TimeUnit.SECONDS)) {
                      break;
                    }
                  } catch (InterruptedException ignored) {
                    // a call that does not answer interrupts
                  }
                }
              }
              return super.answer(claims);
            }
          };
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      RelayFixture.Recorder eventsB = new RelayFixture.Recorder();
      Relay a =
          startRunningBatch(
              f,
              h,
              eventsA,
              f.builder(db.newDataSource("relay-a", 4))
                  .workerId("a")
                  .lease(Duration.ofSeconds(3))
                  .renewInterval(Duration.ofMillis(300))
                  .shutdownGrace(Duration.ofMillis(500)));

      // close() returns although the batch never does.
      CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);
      await().atMost(RelayFixture.PATIENCE).until(closing::isDone);

      f.start(
          f.builder(db.newDataSource("relay-b", 4))
              .workerId("b")
              .lease(Duration.ofSeconds(3))
              .listener(eventsB)
              .handle("pub", FAST, claim -> Outcome.done("taken-over")));
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("work_id LIKE 'run-%' AND state = 'done'") == 3);
      for (String id : ids("run-", 3)) {
        // Never released while its call might be in flight: each claim's lease expired.
        assertThat(eventsB.events).contains("reclaimed " + id + " a");
        assertThat(f.attempts(id)).containsExactly("1 lease_expired lease_expired unknown");
        assertThat(eventsA.events).doesNotContain("released " + id);
        assertThat(f.row(id)).containsEntry("receiver_ref", "taken-over");
      }
      finishHung.countDown();
    }
  }

  @Test
  void aBatchInterruptedByShutdownRecordsEachClaimAsShutdownDueAtOnce(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Gated h =
          new Gated(c -> Outcome.done("never")) {
            @Override
            List<Outcome> answer(List<? extends Claim> claims) throws Exception {
              if (claims.stream().anyMatch(c -> c.workId().startsWith("run-"))) {
                new CountDownLatch(1).await(60, TimeUnit.SECONDS); // answers the interrupt
              }
              return super.answer(claims);
            }
          };
      RelayFixture.Recorder eventsA = new RelayFixture.Recorder();
      Relay a =
          startRunningBatch(
              f,
              h,
              eventsA,
              f.builder(db.newDataSource("relay-a", 4))
                  .workerId("a")
                  .lease(Duration.ofSeconds(60))
                  .shutdownGrace(Duration.ofMillis(200)));
      assertThat(h.calls).contains(ids("run-", 3));

      a.close();

      for (String id : ids("run-", 3)) {
        assertThat(f.attempts(id)).containsExactly("1 retry shutdown unknown");
      }
      // Due at once, not after the kind's backoff of a minute.
      assertThat(
              f.count(
                  "work_id LIKE 'run-%' AND state = 'ready' AND available_at <= clock_timestamp()"))
          .isEqualTo(3);
    }
  }

  @Test
  void aFlowLimitHoldsForABatchKindAcrossTwoInstances(TestDatabase db) throws Exception {
    KindPolicy limited = KindPolicy.DEFAULT.withMaxRunning(3);
    RelayLimitsTest.Gauge running = new RelayLimitsTest.Gauge();
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    BatchHandler gauged =
        claims -> {
          sizes.add(claims.size());
          for (int i = 0; i < claims.size(); i++) {
            running.enter();
          }
          try {
            RelayLimitsTest.work(Duration.ofMillis(10));
            return claims.stream().map(c -> (Outcome) Outcome.done()).toList();
          } finally {
            claims.forEach(c -> running.exit());
          }
        };
    RelayLimitsTest.LiveSampler live = new RelayLimitsTest.LiveSampler(db, "limited");
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(ids("l-", 60).stream().map(id -> Work.of(id, "limited", "{}")).toList());
      for (String worker : List.of("w1", "w2")) {
        f.start(
            f.builder(db.newDataSource("relay-" + worker, 4))
                .workerId(worker)
                .handle("limited", limited, gauged));
      }

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("kind = 'limited' AND state = 'done'") == 60);
      // The limit is the claim statement's, in the database: batching cannot pass it.
      assertThat(live.stop()).isBetween(1, 3);
      assertThat(running.max.get()).isBetween(1, 3);
      assertThat(sizes).allMatch(n -> n <= 3);
    } finally {
      live.stop();
    }
  }

  @Test
  void aBatchSizeOutOfRangeIsRefusedAtBuild(TestDatabase db) {
    BatchHandler tooBig =
        new BatchHandler() {
          @Override
          public List<Outcome> handleAll(List<? extends Claim> claims) {
            return claims.stream().map(c -> (Outcome) Outcome.done()).toList();
          }

          @Override
          public int maxBatchSize() {
            return 0;
          }
        };
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> Relay.builder(db.dataSource()).handle("pub", tooBig).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("kind pub: maxBatchSize")
        .hasMessageContaining("between 1 and 1000");
  }

  // ---- helpers ----

  private static Relay startHeld(
      RelayFixture f, Gated h, KindPolicy policy, RelayFixture.Recorder events) {
    return startHeld(f, h, policy, events, f.builder());
  }

  /**
   * Starts a relay with one handler slot and a batch handler for kind {@code pub}, and returns once
   * the item {@code gate} holds that slot: what is enqueued next waits in the buffer until {@code
   * h.gate} opens.
   */
  private static Relay startHeld(
      RelayFixture f,
      Gated h,
      KindPolicy policy,
      RelayFixture.Recorder events,
      Relay.Builder builder) {
    Relay r = f.start(builder.concurrency(1).listener(events).handle("pub", policy, h));
    f.enqueue(Work.of("gate", "pub", "{}"));
    await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started gate") == 1);
    return r;
  }

  /**
   * Starts a held relay (see {@link #startHeld}), enqueues {@code run-0} to {@code run-2}, and
   * returns once they are buffered and handed to {@code h} together.
   */
  private static Relay startRunningBatch(
      RelayFixture f, Gated h, RelayFixture.Recorder events, Relay.Builder builder) {
    Relay r = startHeld(f, h, FAST, events, builder);
    f.enqueue(ids("run-", 3).stream().map(id -> Work.of(id, "pub", "{}")).toList());
    await().atMost(RelayFixture.PATIENCE).until(() -> events.count("claimed run-") == 3);
    h.gate.countDown();
    await().atMost(RelayFixture.PATIENCE).until(() -> events.count("started run-") == 3);
    return r;
  }

  private static List<String> ids(String prefix, int n) {
    return IntStream.range(0, n).mapToObj(i -> prefix + i).toList();
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  /** Records each call's work IDs; a call holding {@code gate} waits until the gate opens. */
  static class Gated implements BatchHandler {
    final List<List<String>> calls = new CopyOnWriteArrayList<>();
    final CountDownLatch gate = new CountDownLatch(1);
    private final Function<Claim, Outcome> decide;

    Gated(Function<Claim, Outcome> decide) {
      this.decide = decide;
    }

    @Override
    public final List<Outcome> handleAll(List<? extends Claim> claims) throws Exception {
      calls.add(claims.stream().map(Claim::workId).toList());
      if (claims.stream().anyMatch(c -> c.workId().equals("gate"))) {
        gate.await(60, TimeUnit.SECONDS);
      }
      return answer(claims);
    }

    List<Outcome> answer(List<? extends Claim> claims) throws Exception {
      List<Outcome> out = new ArrayList<>();
      for (Claim c : claims) {
        out.add(decide.apply(c));
      }
      return out;
    }

    int sizeOfCallWith(String id) {
      return calls.stream().filter(call -> call.contains(id)).findFirst().orElseThrow().size();
    }

    List<String> handled() {
      return calls.stream().flatMap(List::stream).toList();
    }
  }
}
