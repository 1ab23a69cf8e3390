package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.KindPolicy;
import dev.relay.RelayTracing;
import dev.relay.internal.store.Settlement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher on a test clock with no database: what starts, and what is released unrun. The
 * handler executor only records the attempts it is given, so nothing runs and the one slot stays
 * taken.
 */
class DispatcherTest {
  private final TestTimeSource time = new TestTimeSource();
  private final RuntimeFixture.Recorded completions = new RuntimeFixture.Recorded();
  private final LiveClaims live = new LiveClaims(() -> {});
  private final List<Runnable> attempts = new CopyOnWriteArrayList<>();
  private final AtomicInteger started = new AtomicInteger();
  private final TrackedConnections connections =
      new TrackedConnections(RuntimeFixture.noDatabase());
  private final Dispatcher dispatcher =
      new Dispatcher(
          1,
          Map.of(),
          Set.of(),
          RuntimeFixture.START_MARGIN.toNanos(),
          attempts::add,
          new AttemptRunner(
              Map.of(),
              RuntimeFixture.events(),
              completions,
              live::ended,
              new RunTimeAverage(),
              time,
              RelayTracing.NONE),
          RuntimeFixture.releaser(completions, connections, live),
          c -> started.incrementAndGet(),
          live,
          time);
  private final Thread thread = new Thread(dispatcher, "dispatcher-under-test");

  @AfterEach
  void stop() throws InterruptedException {
    dispatcher.stop();
    thread.interrupt();
    thread.join(10_000);
  }

  @Test
  void aClaimThatCanStartWithinItsLeaseStarts() {
    LiveClaim c = claim();
    thread.start();
    dispatcher.add(c);

    await().atMost(Duration.ofSeconds(10)).until(() -> attempts.size() == 1);
    assertThat(c.phase.get()).isEqualTo(LiveClaim.Phase.RUNNING);
    assertThat(c.startedNanos).isEqualTo(time.nanoTime());
    assertThat(started).hasValue(1);
    assertThat(completions.submitted).isEmpty();
  }

  @Test
  void aClaimPastTheStartMarginOfItsLeaseIsReleasedUnrun() {
    LiveClaim late = claim();
    time.advance(RuntimeFixture.LEASE.minus(RuntimeFixture.START_MARGIN));
    LiveClaim fresh = claim();
    thread.start();
    dispatcher.add(late);
    dispatcher.add(fresh);

    await().atMost(Duration.ofSeconds(10)).until(() -> attempts.size() == 1);
    assertThat(completions.submitted).containsExactly(new Settlement.Release(late.ref));
    assertThat(late.phase.get()).isEqualTo(LiveClaim.Phase.RELEASING);
    assertThat(fresh.phase.get())
        .as("the slot went to the one that could start")
        .isEqualTo(LiveClaim.Phase.RUNNING);
  }

  @Test
  void bufferedClaimsOfABatchKindStartTogetherInOneSlotEachCheckedAgainstItsOwnLease() {
    List<Runnable> batches = new CopyOnWriteArrayList<>();
    Dispatcher batching =
        new Dispatcher(
            1,
            Map.of("batch", 3),
            Set.of(),
            RuntimeFixture.START_MARGIN.toNanos(),
            batches::add,
            new AttemptRunner(
                Map.of(),
                RuntimeFixture.events(),
                completions,
                live::ended,
                new RunTimeAverage(),
                time,
                RelayTracing.NONE),
            RuntimeFixture.releaser(completions, connections, live),
            c -> started.incrementAndGet(),
            live,
            time);
    LiveClaim late = claim("late", "batch");
    time.advance(RuntimeFixture.LEASE.minus(RuntimeFixture.START_MARGIN));
    LiveClaim first = claim("first", "batch");
    LiveClaim other = claim("other", "k");
    LiveClaim second = claim("second", "batch");
    LiveClaim third = claim("third", "batch");
    LiveClaim fourth = claim("fourth", "batch");
    for (LiveClaim c : List.of(first, late, other, second, third)) {
      batching.add(c);
    }
    batching.add(fourth);
    Thread t = new Thread(batching, "batching-dispatcher-under-test");
    t.start();
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> batches.size() == 1);
      // first, late and second were taken (the batch size is 3); late could not start in time.
      assertThat(completions.submitted).containsExactly(new Settlement.Release(late.ref));
      assertThat(first.phase.get()).isEqualTo(LiveClaim.Phase.RUNNING);
      assertThat(second.phase.get()).isEqualTo(LiveClaim.Phase.RUNNING);
      assertThat(first.startedNanos).isEqualTo(second.startedNanos);
      // One slot for the batch: the rest wait, the other kind's claim in its place.
      assertThat(List.of(other, third, fourth))
          .allMatch(c -> c.phase.get() == LiveClaim.Phase.BUFFERED);
      assertThat(started).as("told once for each claim that started").hasValue(2);
    } finally {
      batching.stop();
      t.interrupt();
    }
  }

  private LiveClaim claim(String id, String kind) {
    LiveClaim c = RuntimeFixture.claim(id, kind, KindPolicy.DEFAULT, time.nanoTime(), time);
    live.add(c);
    return c;
  }

  private LiveClaim claim() {
    LiveClaim c =
        RuntimeFixture.claim("w-" + live.size(), KindPolicy.DEFAULT, time.nanoTime(), time);
    live.add(c);
    return c;
  }
}
