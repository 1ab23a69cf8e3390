package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.RelayConfig;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The claimer's sizing rules, on the fixture's settings: 4 slots, a buffer of at most 8, claims of
 * at most 10, completion batches of 20, a 30 s lease with a 5 s start margin.
 */
class ClaimSizingTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long S = TimeUnit.SECONDS.toNanos(1);

  private final ClaimSizing sizing = new ClaimSizing(RuntimeFixture.config());

  @Nested
  class WantedBuffer {
    @Test
    void beforeAnythingIsMeasuredItHoldsOneItemPerSlot() {
      assertThat(sizing.wantedBuffer(0, 0)).isEqualTo(4);
    }

    @Test
    void fastHandlersInABacklogGetTheWholeBuffer() {
      // 4 slots × 2 round trips of 2 ms at 1 ms per handler = 16 items, capped at the buffer of 8.
      assertThat(sizing.wantedBuffer(1 * MS, 2 * MS)).isEqualTo(8);
    }

    @Test
    void aKilledWorkerStrandsAtMostWhatItsSlotsStartInASecond() {
      // 4 slots at 400 ms per handler start 10 a second; claims slow enough (2 s round trips) to
      // want 4 × 2 × 2 s / 400 ms = 40 would strand 4 seconds' work: capped at 10 (here the
      // fixture's buffer of 8 is smaller still).
      assertThat(sizing.wantedBuffer(400 * MS, 2 * S)).isEqualTo(8);
      RelayConfig c = RuntimeFixture.config();
      ClaimSizing deep =
          new ClaimSizing(
              new RelayConfig(
                  c.workerId(),
                  c.schema(),
                  c.queues(),
                  c.batchSize(),
                  c.concurrency(),
                  1000, // a buffer deep enough that only the second bounds it
                  c.lease(),
                  c.renewInterval(),
                  c.startMargin(),
                  c.pollInterval(),
                  c.pollJitter(),
                  c.notifications(),
                  c.shutdownGrace(),
                  c.completionBatchSize(),
                  c.completionMaxDelay(),
                  c.statementTimeout(),
                  c.lockTimeout(),
                  c.idleInTransactionTimeout(),
                  c.kinds()));
      assertThat(deep.wantedBuffer(400 * MS, 2 * S)).isEqualTo(10);
      assertThat(deep.wantedBuffer(1 * MS, 100 * MS))
          .as("fast handlers: 4,000 a second, so the 800 two round trips want stay")
          .isEqualTo(800);
    }

    @Test
    void slowHandlersHoldNoMoreThanCanStartWithinTheLease() {
      // 25 s to start in (lease − margin); 10 s handlers: 4 × 2 = 8 startable, 4 of them in slots.
      assertThat(sizing.startable(10 * S)).isEqualTo(8);
      assertThat(sizing.wantedBuffer(10 * S, 1 * S)).isEqualTo(4);
      // 20 s handlers: only what the slots start now can start in time; nothing is buffered.
      assertThat(sizing.startable(20 * S)).isEqualTo(4);
      assertThat(sizing.wantedBuffer(20 * S, 1 * S)).isZero();
    }
  }

  @Nested
  class BatchSlots {
    // 4 slots that each run batches of up to 10 claims: 40 run at once.
    private final ClaimSizing batches = new ClaimSizing(RuntimeFixture.config(), 10);

    @Test
    void aBatchSlotCountsAsManyRunnableClaimsAsItsBatchSize() {
      assertThat(batches.wantedBuffer(0, 0)).as("at least a batch per slot, capped").isEqualTo(8);
      assertThat(batches.free(0, 0, 0, 0)).isEqualTo(40 + 8);
      assertThat(batches.free(40, 0, 0, 0)).as("four full batches running").isEqualTo(8);
      assertThat(batches.claimSize(48, 8, false, true)).isEqualTo(10); // the claim batch size
    }

    @Test
    void theLeaseStillBoundsWhatIsHeld() {
      // Per-claim run time of 10 s: 4 × 25 s / 10 s = 8 startable, fewer than the 40 that run.
      assertThat(batches.startable(10 * S)).isEqualTo(40);
      assertThat(batches.wantedBuffer(10 * S, 1 * S)).isZero();
    }
  }

  @Nested
  class Free {
    @Test
    void emptyWorkerHasRoomForSlotsAndWantedBuffer() {
      assertThat(sizing.free(0, 0, 0, 0)).isEqualTo(4 + 4);
    }

    @Test
    void outcomesHandedToTheCompleterFreeTheirPlaceAtOnce() {
      assertThat(sizing.free(8, 0, 0, 0)).as("8 buffered or running").isZero();
      assertThat(sizing.free(8, 8, 0, 0)).as("the same 8 being recorded").isEqualTo(8);
    }

    @Test
    void outcomesWaitingToBeRecordedAreBoundedByOneBatchPerWriterAndOneCollecting() {
      // Slots + buffer + 3 × 20 live claims (a batch being written by each of the completer's two
      // writers, one collecting), all being recorded: no more claims until some are.
      assertThat(Completer.WRITERS).isEqualTo(2);
      assertThat(sizing.free(4 + 8 + 60, 4 + 8 + 60, 0, 0)).isZero();
      assertThat(sizing.free(4 + 8 + 59, 4 + 8 + 59, 0, 0)).isEqualTo(1);
    }
  }

  @Nested
  class ClaimSize {
    @Test
    void takesWhatFitsUpToTheBatchSize() {
      assertThat(sizing.claimSize(3, 4, false, true)).isEqualTo(3);
      assertThat(sizing.claimSize(25, 8, false, true)).isEqualTo(10);
    }

    @Test
    void nothingWithoutRoom() {
      assertThat(sizing.claimSize(0, 4, false, true)).isZero();
      assertThat(sizing.claimSize(-2, 4, true, true)).isZero();
    }

    @Test
    void inABacklogItWaitsForHalfABatchRatherThanClaimOneRowPerFreedSlot() {
      // Capacity 4 + 4 = 8: half of min(batch 10, 8) = 4.
      assertThat(sizing.claimSize(3, 4, true, false)).isZero();
      assertThat(sizing.claimSize(4, 4, true, false)).isEqualTo(4);
    }

    @Test
    void aDuePollOrANotificationClaimsWhateverFitsEvenInABacklog() {
      assertThat(sizing.claimSize(1, 4, true, true)).isEqualTo(1);
    }
  }
}
