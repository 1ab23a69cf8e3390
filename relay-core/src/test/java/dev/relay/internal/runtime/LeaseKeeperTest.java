package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Claim.StopReason;
import dev.relay.KindPolicy;
import dev.relay.RelayConfig;
import dev.relay.internal.store.Settlement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The lease keeper's decisions on local monotonic time, driven one {@code tick()} at a time on a
 * test clock. The renew interval here equals the lease, so no renewal (which needs a database)
 * becomes due before the lease is lost: these tests are about what the keeper decides without one.
 */
class LeaseKeeperTest {
  private static final Duration MAX_RUN_TIME = Duration.ofMinutes(10);

  private final TestTimeSource time = new TestTimeSource();
  private final LiveClaims live = new LiveClaims(() -> {});
  private final RuntimeFixture.Recorded completions = new RuntimeFixture.Recorded();
  private final RelayConfig config =
      RuntimeFixture.config(RuntimeFixture.LEASE, KindPolicy.DEFAULT.withMaxRunTime(MAX_RUN_TIME));
  private final TrackedConnections connections =
      new TrackedConnections(RuntimeFixture.noDatabase());
  private final LeaseKeeper keeper =
      new LeaseKeeper(
          config,
          RuntimeFixture.store(),
          connections,
          RuntimeFixture.events(),
          live,
          RuntimeFixture.releaser(completions, connections, live),
          time,
          new AtomicLong());
  private final List<StopReason> stops = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    keeper.stop();
  }

  @Test
  void aClaimIsLostWhenAFullLeasePassedSinceItWasClaimed() {
    LiveClaim c = running("w-1");

    time.advance(RuntimeFixture.LEASE.minusNanos(1));
    long next = keeper.tick();
    assertThat(c.isLeaseLost()).isFalse();
    assertThat(stops).isEmpty();
    assertThat(next)
        .as("it looks again exactly when the local lease ends")
        .isEqualTo(time.nanoTime() + 1);

    time.advance(Duration.ofNanos(1));
    keeper.tick();
    assertThat(c.isLeaseLost()).isTrue();
    assertThat(c.stopReason()).isEqualTo(StopReason.LEASE_LOST);
    assertThat(stops).containsExactly(StopReason.LEASE_LOST);
    assertThat(c.leaseRemaining()).isEqualTo(Duration.ZERO);
  }

  @Test
  void theLocalLeaseCountsFromWhenTheLastSuccessfulRenewalWasSent() {
    LiveClaim c = running("w-1");
    time.advance(Duration.ofSeconds(20));
    long renewalSent = time.nanoTime();
    time.advance(Duration.ofSeconds(1)); // the renewal's round trip
    c.renewed(Instant.now().plusSeconds(30), renewalSent);

    time.advance(Duration.ofSeconds(28)); // 49 s after the claim, 29 s after the renewal was sent
    keeper.tick();
    assertThat(c.isLeaseLost()).isFalse();
    assertThat(c.leaseRemaining()).isEqualTo(Duration.ofSeconds(1));

    time.advance(Duration.ofSeconds(1));
    keeper.tick();
    assertThat(c.isLeaseLost()).isTrue();
    assertThat(stops).containsExactly(StopReason.LEASE_LOST);
  }

  @Test
  void aHandlerPastItsMaxRunTimeIsInterruptedAndNotRenewedFurther() {
    LiveClaim c = running("w-1");
    c.bindThread(Thread.currentThread());
    try {
      time.advance(MAX_RUN_TIME);
      keeper.tick();

      assertThat(c.timedOut).isTrue();
      assertThat(stops).containsExactly(StopReason.TIMED_OUT);
      assertThat(Thread.interrupted()).as("the handler's thread was interrupted").isTrue();
      assertThat(c.isLeaseLost()).as("left to its lease, not marked lost").isFalse();
    } finally {
      c.unbindThread();
      Thread.interrupted();
    }
  }

  @Test
  void aBufferedClaimThatCanNoLongerStartWithinItsLeaseIsReleased() {
    LiveClaim c = RuntimeFixture.claim("w-1", KindPolicy.DEFAULT, time.nanoTime(), time);
    live.add(c);

    time.advance(RuntimeFixture.LEASE.minus(RuntimeFixture.START_MARGIN).minusNanos(1));
    keeper.tick();
    assertThat(completions.submitted).isEmpty();

    time.advance(Duration.ofNanos(1));
    keeper.tick();
    assertThat(c.phase.get()).isEqualTo(LiveClaim.Phase.RELEASING);
    assertThat(completions.submitted).containsExactly(new Settlement.Release(c.ref));
  }

  /** A claim of the kind whose handler started now, with its stop reasons recorded. */
  @Test
  void aStartWakesTheKeeperOnlyWhenItsPlanMayNotCoverTheStart() {
    // the renew interval here is the lease (30 s); the kind's max run time is 10 minutes
    long before = keeper.wakeSignals();
    keeper.started(running("w-1"));
    assertThat(keeper.wakeSignals())
        .as("a start whose timeout and renewal lie beyond the next planned pass")
        .isEqualTo(before);

    LiveClaim quick =
        RuntimeFixture.claim(
            "w-2", KindPolicy.DEFAULT.withMaxRunTime(Duration.ofSeconds(1)), time.nanoTime(), time);
    quick.startedNanos = time.nanoTime();
    quick.phase.set(LiveClaim.Phase.RUNNING);
    keeper.started(quick);
    assertThat(keeper.wakeSignals())
        .as("a max run time shorter than the renew interval")
        .isEqualTo(before + 1);

    LiveClaim waited = RuntimeFixture.claim("w-3", config.kinds().get("k"), time.nanoTime(), time);
    time.advance(RuntimeFixture.LEASE); // buffered a whole renew interval
    waited.startedNanos = time.nanoTime();
    waited.phase.set(LiveClaim.Phase.RUNNING);
    keeper.started(waited);
    assertThat(keeper.wakeSignals()).as("a renewal already due").isEqualTo(before + 2);
  }

  private LiveClaim running(String id) {
    LiveClaim c = RuntimeFixture.claim(id, config.kinds().get("k"), time.nanoTime(), time);
    c.onStop(() -> stops.add(c.stopReason()));
    c.startedNanos = time.nanoTime();
    c.phase.set(LiveClaim.Phase.RUNNING);
    live.add(c);
    return c;
  }
}
