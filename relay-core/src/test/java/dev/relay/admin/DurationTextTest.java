package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one wording of durations that relay status and the console share. */
class DurationTextTest {
  @Test
  void anAgeIsWrittenInItsTwoLargestUnits() {
    assertThat(DurationText.age(Duration.ZERO)).isEqualTo("0 s");
    assertThat(DurationText.age(Duration.ofSeconds(42))).isEqualTo("42 s");
    assertThat(DurationText.age(Duration.ofSeconds(185))).isEqualTo("3 min 5 s");
    assertThat(DurationText.age(Duration.ofMinutes(124))).isEqualTo("2 h 4 min");
    assertThat(DurationText.age(Duration.ofHours(27))).isEqualTo("1 d 3 h");
  }

  @Test
  void aLatencyIsFinerBelowAMinute() {
    assertThat(DurationText.latency(Duration.ofNanos(400_000))).isEqualTo("< 1 ms");
    assertThat(DurationText.latency(Duration.ofMillis(394))).isEqualTo("394 ms");
    assertThat(DurationText.latency(Duration.ofMillis(1_240))).isEqualTo("1.2 s");
    assertThat(DurationText.latency(Duration.ofSeconds(185))).isEqualTo("3 min 5 s");
  }
}
