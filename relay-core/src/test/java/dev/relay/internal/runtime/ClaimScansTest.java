package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.store.ClaimPosition;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * When a claim resumes and when it scans the claim index from its start, with given times: cheap
 * full scans keep the rhythm of before (after any short claim, every 500 ms in a backlog); dear
 * ones (a held horizon) take at most about a tenth of the time, so they can never crowd out every
 * other claim.
 */
class ClaimScansTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long S = TimeUnit.SECONDS.toNanos(1);
  private static final OffsetDateTime T0 =
      OffsetDateTime.of(2026, 12, 5, 9, 0, 0, 0, ZoneOffset.UTC);

  private final ClaimScans scans = new ClaimScans();

  private static ClaimPosition at(int n) {
    return new ClaimPosition(0, T0.plusNanos(n * 1000L), "order-" + n);
  }

  @Test
  void theFirstClaimIsAFullScan() {
    assertThat(scans.resumeAt(0)).isNull();
  }

  @Nested
  class CheapFullScans {
    @Test
    void aFullClaimResumesWhereItStoppedUntilHalfASecondHasPassed() {
      scans.claimed(null, 0, 5 * MS, true, at(100));
      assertThat(scans.resumeAt(10 * MS)).isEqualTo(at(100));
      scans.claimed(at(100), 10 * MS, 5 * MS, true, at(200));
      assertThat(scans.resumeAt(499 * MS)).isEqualTo(at(200));
      assertThat(scans.resumeAt(500 * MS)).as("half a second after the last full scan").isNull();
    }

    @Test
    void aShortClaimIsFollowedByAFullScan() {
      scans.claimed(null, 0, 5 * MS, true, at(100));
      scans.claimed(at(100), 10 * MS, 5 * MS, false, at(150));
      assertThat(scans.resumeAt(20 * MS)).isNull();
    }

    @Test
    void aFailedClaimIsFollowedByAFullScan() {
      scans.claimed(null, 0, 5 * MS, true, at(100));
      scans.reset();
      assertThat(scans.resumeAt(10 * MS)).isNull();
    }

    @Test
    void aFullScanThatTookFiftyMillisecondsIsStillCheap() {
      // 10 × 50 ms is the half second itself: short claims still look behind the position at once
      scans.claimed(null, 0, 50 * MS, true, at(100));
      scans.claimed(at(100), 60 * MS, 5 * MS, false, at(120));
      assertThat(scans.resumeAt(70 * MS)).isNull();
    }
  }

  @Nested
  class DearFullScans {
    /** Two full scans of {@code took} each, the second starting at {@code second}. */
    private void twoFullScans(long second, long took, ClaimPosition last) {
      scans.claimed(null, 0, took, true, at(50));
      scans.claimed(null, second, took, true, last);
    }

    @Test
    void theNextFullScanWaitsTenTimesWhatTheLastOnesTook() {
      // a held horizon: each scan from the start walked entries no vacuum could remove for 2 s
      twoFullScans(2 * S, 2 * S, at(100));
      assertThat(scans.resumeAt(4 * S + 1 * MS)).isEqualTo(at(100));
      scans.claimed(at(100), 4 * S + 1 * MS, 5 * MS, true, at(200));
      assertThat(scans.resumeAt(21 * S)).isEqualTo(at(200));
      assertThat(scans.resumeAt(22 * S)).as("ten times 2 s after the last one started").isNull();
    }

    @Test
    void oneSlowFullScanDoesNotChangeTheRhythm() {
      scans.claimed(null, 0, 5 * MS, true, at(50));
      scans.claimed(null, 500 * MS, 2 * S, true, at(100)); // a pause, not a trend
      assertThat(scans.resumeAt(2 * S + 600 * MS)).isNull();
      scans.claimed(null, 2 * S + 600 * MS, 5 * MS, true, at(150));
      scans.claimed(at(150), 2 * S + 610 * MS, 5 * MS, false, at(160));
      assertThat(scans.resumeAt(2 * S + 620 * MS)).as("after a short claim").isNull();
    }

    @Test
    void aShortClaimKeepsResumingUntilTheFullScanIsDue() {
      twoFullScans(1 * S, 1 * S, at(100));
      scans.claimed(at(100), 2 * S, 5 * MS, false, at(130));
      assertThat(scans.resumeAt(3 * S)).as("from the short claim's last row").isEqualTo(at(130));
      scans.claimed(at(130), 3 * S, 5 * MS, false, null);
      assertThat(scans.resumeAt(4 * S)).as("nothing taken: the same position").isEqualTo(at(130));
      assertThat(scans.resumeAt(11 * S)).isNull();
    }

    @Test
    void aCheapFullScanBringsBackTheHalfSecondRhythm() {
      twoFullScans(2 * S, 2 * S, at(100));
      scans.claimed(null, 24 * S, 5 * MS, true, at(300)); // the horizon was released
      assertThat(scans.resumeAt(24 * S + 499 * MS)).isEqualTo(at(300));
      assertThat(scans.resumeAt(24 * S + 500 * MS)).isNull();
      scans.claimed(null, 25 * S, 5 * MS, true, at(400));
      scans.claimed(at(400), 25 * S + 10 * MS, 5 * MS, false, at(410));
      assertThat(scans.resumeAt(25 * S + 20 * MS)).isNull();
    }

    @Test
    void aFullScanThatFoundNothingLeavesNothingToResumeFrom() {
      scans.claimed(null, 0, 2 * S, false, null);
      scans.claimed(null, 2 * S, 2 * S, false, null);
      assertThat(scans.resumeAt(5 * S)).isNull();
    }
  }
}
