package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.KindPolicy;
import dev.relay.internal.store.Settlement;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Bug 6: an outcome submitted while the completer stops must be refused or reported, never queued
 * after the completer drained its queue for the last time (it would hold its claim's capacity and
 * vanish without a word). The test holds a submit between its accept check and its enqueue, lets
 * the completer stop meanwhile, and only then lets the submit go on.
 */
class CompleterShutdownTest {
  private final TestTimeSource time = new TestTimeSource();
  private final List<LiveClaim> done = new CopyOnWriteArrayList<>();
  private final AtomicInteger submittedSignals = new AtomicInteger();
  private final Completer completer =
      new Completer(
          RuntimeFixture.config(),
          RuntimeFixture.store(),
          new TrackedConnections(RuntimeFixture.noDatabase()),
          RuntimeFixture.events(),
          time,
          done::add,
          submittedSignals::incrementAndGet,
          new AtomicLong());

  @Test
  void anOutcomeSubmittedWhileTheCompleterStopsIsReportedNotSilentlyQueued() throws Exception {
    LiveClaim claim = RuntimeFixture.claim("w-1", KindPolicy.DEFAULT, time.nanoTime(), time);
    CountDownLatch inWindow = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    completer.afterAcceptCheck(
        () -> {
          inWindow.countDown();
          awaitQuietly(proceed);
        });
    AtomicBoolean accepted = new AtomicBoolean();
    Thread submitter =
        new Thread(() -> accepted.set(completer.submit(claim, new Settlement.Release(claim.ref))));
    submitter.start();
    assertThat(inWindow.await(10, TimeUnit.SECONDS)).as("submit reached its window").isTrue();

    // The completer stops while the submit is between its check and its enqueue: its run() ends at
    // once (nothing queued yet) and drains the queue on the way out.
    completer.finish();
    Thread completerThread = new Thread(completer);
    completerThread.start();
    // It either waits on a monitor the submitter holds (the accept lock) or has already gone
    // through its exit. Only then does the submit go on.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                completerThread.getState() == Thread.State.TERMINATED
                    || blockedBy(completerThread, submitter));
    proceed.countDown();
    submitter.join(10_000);
    completerThread.join(10_000);
    assertThat(submitter.isAlive()).isFalse();
    assertThat(completerThread.isAlive()).isFalse();

    assertThat(completer.pending()).as("outcomes left queued after the completer stopped").isZero();
    if (accepted.get()) {
      // Queued before the exit drained the queue: reported as unrecorded and its claim ended.
      assertThat(done).containsExactly(claim);
    } else {
      assertThat(done).isEmpty(); // refused: the caller keeps the claim
    }
  }

  @Test
  void aSubmitAfterTheCompleterStoppedIsRefused() throws Exception {
    completer.finish();
    Thread completerThread = new Thread(completer);
    completerThread.start();
    completerThread.join(10_000);
    LiveClaim claim = RuntimeFixture.claim("w-2", KindPolicy.DEFAULT, time.nanoTime(), time);

    assertThat(completer.submit(claim, new Settlement.Release(claim.ref))).isFalse();
    assertThat(completer.pending()).isZero();
    assertThat(done).isEmpty();
    assertThat(submittedSignals).hasValue(0);
  }

  private static boolean blockedBy(Thread waiting, Thread owner) {
    ThreadInfo info = ManagementFactory.getThreadMXBean().getThreadInfo(waiting.getId());
    return info != null
        && info.getThreadState() == Thread.State.BLOCKED
        && info.getLockOwnerId() == owner.getId();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new AssertionError("the test never let the submit go on");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
