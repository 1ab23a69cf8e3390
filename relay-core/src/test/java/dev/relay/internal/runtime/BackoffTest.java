package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class BackoffTest {
  private static final Duration BASE = Duration.ofMillis(100);
  private static final Duration CAP = Duration.ofSeconds(1);

  @Test
  void ceilingDoublesPerAttemptUpToTheCap() {
    assertThat(IntStream.rangeClosed(1, 6).mapToObj(n -> Backoff.ceiling(BASE, CAP, n)).toList())
        .containsExactly(
            Duration.ofMillis(100),
            Duration.ofMillis(200),
            Duration.ofMillis(400),
            Duration.ofMillis(800),
            CAP,
            CAP);
  }

  @Test
  void ceilingNeverOverflowsForLargeAttemptNumbers() {
    assertThat(Backoff.ceiling(Duration.ofDays(1), Duration.ofDays(365), 10_000))
        .isEqualTo(Duration.ofDays(365));
    assertThat(Backoff.ceiling(BASE, CAP, 63)).isEqualTo(CAP);
  }

  @Test
  void delaysAreFullyJitteredBetweenZeroAndTheCeiling() {
    for (int attempt = 1; attempt <= 8; attempt++) {
      Duration ceiling = Backoff.ceiling(BASE, CAP, attempt);
      Set<Duration> seen = new HashSet<>();
      long sumNanos = 0;
      for (int i = 0; i < 2000; i++) {
        Duration d = Backoff.delay(BASE, CAP, attempt);
        assertThat(d).isBetween(Duration.ZERO, ceiling);
        seen.add(d);
        sumNanos += d.toNanos();
      }
      // Spread over the whole range, not clustered: many distinct values, mean near the middle.
      assertThat(seen).hasSizeGreaterThan(1000);
      double mean = sumNanos / 2000.0;
      assertThat(mean).isBetween(ceiling.toNanos() * 0.4, ceiling.toNanos() * 0.6);
    }
  }

  @Test
  void delaysGrowWithTheAttemptNumberOnAverage() {
    double previous = 0;
    for (int attempt = 1; attempt <= 4; attempt++) {
      final int n = attempt;
      double mean =
          IntStream.range(0, 2000)
              .mapToLong(i -> Backoff.delay(BASE, CAP, n).toNanos())
              .average()
              .orElseThrow();
      assertThat(mean).isGreaterThan(previous * 1.5);
      previous = mean;
    }
  }

  @Test
  void pausesAfterRelaysOwnFailuresLieBetweenHalfTheCeilingAndTheCeiling() {
    for (int failures = 1; failures <= 8; failures++) {
      Duration ceiling = Backoff.ceiling(BASE, CAP, failures + 1);
      Set<Duration> seen = new HashSet<>();
      for (int i = 0; i < 500; i++) {
        Duration d = Backoff.pause(BASE, CAP, failures);
        assertThat(d).isBetween(ceiling.dividedBy(2), ceiling);
        seen.add(d);
      }
      assertThat(seen).as("jittered, not fixed").hasSizeGreaterThan(100);
    }
  }
}
