package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.BatchHandler;
import dev.relay.Handler;
import dev.relay.KindPolicy;
import dev.relay.Outcome;
import dev.relay.RelayTracing;
import dev.relay.internal.store.Settlement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** One attempt, run on the calling thread with no database: what reaches the completions. */
class AttemptRunnerTest {
  private final TestTimeSource time = new TestTimeSource();
  private final RuntimeFixture.Recorded completions = new RuntimeFixture.Recorded();
  private final List<LiveClaim> ended = new CopyOnWriteArrayList<>();
  private final RunTimeAverage runTime = new RunTimeAverage();

  @Test
  void aReturnedDoneIsHandedOverAndItsRunTimeCounted() {
    LiveClaim c = running();
    runner(
            claim -> {
              time.advance(Duration.ofSeconds(3));
              return Outcome.done("receipt-1");
            })
        .run(c);

    assertThat(completions.submitted).hasSize(1);
    assertThat(completions.submitted.get(0))
        .isInstanceOfSatisfying(
            Settlement.Complete.class, d -> assertThat(d.receiverRef()).isEqualTo("receipt-1"));
    assertThat(c.phase.get()).isEqualTo(LiveClaim.Phase.FINISHING);
    assertThat(ended).isEmpty();
    assertThat(runTime.nanos()).isEqualTo(Duration.ofSeconds(3).toNanos());
  }

  @Test
  void aThrownExceptionIsAnUnknownEffectRetriedUnderTheDefaultPolicy() {
    LiveClaim c = running();
    runner(
            claim -> {
              throw new IllegalStateException("receiver said 502");
            })
        .run(c);

    assertThat(completions.submitted).hasSize(1);
    assertThat(completions.submitted.get(0))
        .isInstanceOfSatisfying(
            Settlement.Retry.class,
            r -> {
              assertThat(r.errorKind()).isEqualTo("exception");
              assertThat(r.error()).contains("receiver said 502");
              assertThat(r.evidence()).isEqualTo(Settlement.Evidence.UNKNOWN);
            });
  }

  @Test
  void aRetryReturnedAfterTheShutdownStopIsRecordedAsShutdownAndDueAtOnceUnlessItNamesADelay() {
    LiveClaim c = running();
    runner(
            claim -> {
              stopForShutdown(c);
              return Outcome.retry("stopping", Outcome.Effect.NOT_DELIVERED);
            })
        .run(c);
    LiveClaim named = running();
    runner(
            claim -> {
              stopForShutdown(named);
              return Outcome.retry("stopping").after(Duration.ofSeconds(7));
            })
        .run(named);

    assertThat(completions.submitted)
        .extracting(s -> (Settlement.Retry) s)
        .extracting(Settlement.Retry::errorKind, Settlement.Retry::delay)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("shutdown", Duration.ZERO),
            org.assertj.core.groups.Tuple.tuple("shutdown", Duration.ofSeconds(7)));
    assertThat(c.stopReason()).isEqualTo(dev.relay.Claim.StopReason.SHUTDOWN);
  }

  /** What close() does to a handler still running after the grace, but the interrupt. */
  private static void stopForShutdown(LiveClaim c) {
    c.stoppedForShutdown = true;
    c.signal(dev.relay.Claim.StopReason.SHUTDOWN);
  }

  @Test
  void anOutcomeTheCompletionsRefuseEndsTheClaimHere() {
    completions.close(); // relay closed while the handler ran
    LiveClaim c = running();
    runner(claim -> Outcome.done()).run(c);

    assertThat(completions.submitted).isEmpty();
    assertThat(ended).containsExactly(c);
  }

  @Test
  void theHandlersThreadIsNotLeftInterrupted() {
    LiveClaim c = running();
    runner(
            claim -> {
              c.interrupt(); // as a timeout or close() would
              return Outcome.done();
            })
        .run(c);

    assertThat(Thread.currentThread().isInterrupted()).isFalse();
  }

  @Test
  void aBatchHandsOverOneOutcomePerClaimAndCountsTheRunTimePerClaim() {
    LiveClaim a = running("a");
    LiveClaim b = running("b");
    LiveClaim c = running("c");
    BatchHandler h =
        claims -> {
          time.advance(Duration.ofSeconds(3));
          List<Outcome> out = new ArrayList<>();
          out.add(Outcome.done("receipt-a"));
          out.add(null); // this one claim's effect is unknown
          out.add(Outcome.fail("too large", Outcome.Effect.NOT_DELIVERED));
          return out;
        };
    runner(h).runAll(List.of(a, b, c));

    assertThat(completions.submitted).hasSize(3);
    assertThat(completions.submitted.get(0)).isInstanceOf(Settlement.Complete.class);
    assertThat(completions.submitted.get(1))
        .isInstanceOfSatisfying(
            Settlement.Retry.class,
            r -> assertThat(r.evidence()).isEqualTo(Settlement.Evidence.UNKNOWN));
    assertThat(completions.submitted.get(2)).isInstanceOf(Settlement.Fail.class);
    assertThat(List.of(a, b, c)).allMatch(x -> x.phase.get() == LiveClaim.Phase.FINISHING);
    assertThat(runTime.nanos()).isEqualTo(Duration.ofSeconds(1).toNanos());
  }

  @Test
  void aBatchThatThrowsOrAnswersTheWrongNumberLeavesEveryClaimUnknown() {
    List<LiveClaim> thrown = List.of(running("t-1"), running("t-2"));
    runner(
            (BatchHandler)
                claims -> {
                  throw new IllegalStateException("broker gone");
                })
        .runAll(thrown);
    List<LiveClaim> short1 = List.of(running("s-1"), running("s-2"));
    runner((BatchHandler) claims -> List.of(Outcome.done())).runAll(short1);

    assertThat(completions.submitted).hasSize(4);
    assertThat(completions.submitted)
        .allSatisfy(
            s ->
                assertThat(s)
                    .isInstanceOfSatisfying(
                        Settlement.Retry.class,
                        r -> assertThat(r.evidence()).isEqualTo(Settlement.Evidence.UNKNOWN)));
    assertThat(((Settlement.Retry) completions.submitted.get(3)).error())
        .contains("returned 1 outcomes for 2 claims");
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
  }

  private AttemptRunner runner(Handler handler) {
    return new AttemptRunner(
        Map.of("k", handler),
        RuntimeFixture.events(),
        completions,
        ended::add,
        runTime,
        time,
        RelayTracing.NONE);
  }

  private LiveClaim running() {
    return running("w-1");
  }

  private LiveClaim running(String id) {
    LiveClaim c = RuntimeFixture.claim(id, KindPolicy.DEFAULT, time.nanoTime(), time);
    c.startedNanos = time.nanoTime();
    c.phase.set(LiveClaim.Phase.RUNNING);
    return c;
  }
}
