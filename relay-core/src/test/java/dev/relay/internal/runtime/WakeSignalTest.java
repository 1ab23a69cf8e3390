package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WakeSignalTest {
  private static final long AN_HOUR = TimeUnit.HOURS.toNanos(1);

  private final WakeSignal wake = new WakeSignal();

  @Test
  void aSignalBetweenTheMarkAndTheWaitIsNotLost() {
    long mark = wake.mark();
    wake.signal(); // e.g. a slot freed while the claimer was deciding
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> wake.await(mark, AN_HOUR));
  }

  @Test
  void aRequestWakesAndStaysUntilCleared() {
    long mark = wake.mark();
    wake.request();
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> wake.await(mark, AN_HOUR));
    assertThat(wake.requested()).isTrue();

    wake.clearRequest();
    assertThat(wake.requested()).isFalse();
    assertThat(wake.mark()).isGreaterThan(mark);
  }

  @Test
  void aSignalWakesAWaiterOnAnotherThread() throws Exception {
    long mark = wake.mark();
    Thread waiter =
        new Thread(
            () -> {
              try {
                wake.await(mark, AN_HOUR);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    waiter.start();
    wake.signal();
    waiter.join(10_000);
    assertThat(waiter.isAlive()).isFalse();
  }
}
