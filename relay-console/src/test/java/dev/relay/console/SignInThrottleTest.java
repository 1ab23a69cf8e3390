package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The sign-in limits on a clock the test moves: no waiting. */
class SignInThrottleTest {
  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2026-12-04T08:00:00Z"));
  private final InstantSource clock = now::get;

  private void advance(Duration d) {
    now.updateAndGet(t -> t.plus(d));
  }

  private SignInThrottle throttle(int perUser, int perAddress, int tracked) {
    return new SignInThrottle(perUser, perAddress, Duration.ofMinutes(15), tracked, clock);
  }

  @Test
  void aUserIsRefusedAfterItsLimitFromAnyAddressUntilTheOldestFailureLeavesTheWindow() {
    SignInThrottle t = throttle(3, 100, 1000);
    t.failed("olga", "10.0.0.1");
    advance(Duration.ofMinutes(1));
    t.failed("Olga", "10.0.0.2"); // the same user, whatever the case
    assertThat(t.refusal("olga", "10.0.0.3")).isNull();
    SignInThrottle.Failure third = t.failed(" OLGA ", "10.0.0.3");
    assertThat(third.locks()).isTrue();
    SignInThrottle.Refusal r = t.refusal("olga", "10.0.0.9");
    assertThat(r).isNotNull();
    assertThat(r.user()).isTrue();
    assertThat(r.address()).isFalse();
    assertThat(r.until()).isEqualTo(Instant.parse("2026-12-04T08:15:00Z"));
    assertThat(r.seconds(now.get())).isEqualTo(14 * 60);
    assertThat(t.refusal("sam", "10.0.0.9")).as("another user").isNull();

    advance(Duration.ofMinutes(13).plusSeconds(59));
    assertThat(t.refusal("olga", "10.0.0.9")).isNotNull();
    advance(Duration.ofSeconds(1)); // the first failure leaves the window
    assertThat(t.refusal("olga", "10.0.0.9")).isNull();
    // Sliding: the other two still count, so one more failure locks again, until 08:16.
    assertThat(t.failed("olga", "10.0.0.9").locks()).isTrue();
    assertThat(t.refusal("olga", "10.0.0.1").until())
        .isEqualTo(Instant.parse("2026-12-04T08:16:00Z"));
  }

  @Test
  void anAddressIsRefusedAfterItsLimitWhateverTheUserNames() {
    SignInThrottle t = throttle(100, 4, 1000);
    for (int i = 0; i < 4; i++) {
      assertThat(t.refusal("user-" + i, "192.0.2.7")).isNull();
      t.failed("user-" + i, "192.0.2.7");
    }
    SignInThrottle.Refusal r = t.refusal("someone-else", "192.0.2.7");
    assertThat(r).isNotNull();
    assertThat(r.address()).isTrue();
    assertThat(r.user()).isFalse();
    assertThat(t.refusal("someone-else", "192.0.2.8")).as("another address").isNull();
  }

  @Test
  void memoryIsBoundedWhenAnAttackerCyclesNamesAndAddresses() {
    SignInThrottle t = throttle(5, 5, 100);
    for (int i = 0; i < 10_000; i++) {
      t.failed("name-" + i, "198.51.100." + (i % 250) + "." + i);
      assertThat(t.size()).isLessThanOrEqualTo(200);
    }
    assertThat(t.size()).isEqualTo(200);
  }

  @Test
  void whenFullTheKeyWithTheOldestLatestFailureGoesFirst() {
    SignInThrottle t = throttle(2, 1000, 100);
    t.failed("olga", "a");
    t.failed("olga", "a"); // olga is refused now
    advance(Duration.ofMinutes(20)); // olga's failures have left the window
    t.failed("sam", "b");
    t.failed("sam", "b"); // sam is refused
    for (int i = 0; i < 98; i++) {
      t.failed("filler-" + i, "c");
    }
    // Full (100 user names): the next new name lets go of olga (expired), not sam.
    t.failed("one-more", "c");
    assertThat(t.refusal("sam", "d")).isNotNull();
    assertThat(t.refusal("olga", "d")).isNull();
  }

  @Test
  void aLongOrHostileNameIsKeptShortAndLoggedEscaped() {
    String name = "x".repeat(10_000);
    assertThat(SignInThrottle.userKey(name)).hasSize(SignInThrottle.MAX_NAME);
    assertThat(SignInGuard.shown("olga\nINFO forged line"))
        .isEqualTo("olga\\u000aINFO forged line");
    assertThat(SignInGuard.shown(name))
        .startsWith("xxx")
        .endsWith("...(10000 chars)")
        .hasSizeLessThan(90);
    assertThat(SignInGuard.shown(null)).isEmpty();
  }
}
