package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/**
 * {@link RelayStartupCheck} refuses what the auto-configuration refuses at start-up, naming the
 * property, with no database anywhere (the URL below is never reached).
 */
class RelayStartupCheckTest {
  private static StandardEnvironment env(String... pairs) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      m.put(pairs[i], pairs[i + 1]);
    }
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources().addFirst(new MapPropertySource("test", m));
    return env;
  }

  @Test
  void acceptsAGoodConfigurationAndReturnsItsProperties() {
    RelayProperties p =
        RelayStartupCheck.check(
            env(
                "relay.concurrency", "3",
                "relay.kinds.mail.max-running", "2",
                "relay.schedules.nightly.kind", "mail",
                "relay.schedules.nightly.every", "1h"),
            List.of("mail"));
    assertThat(p.getConcurrency()).isEqualTo(3);
    assertThat(p.getKinds().get("mail").getMaxRunning()).isEqualTo(2);
  }

  @Test
  void refusesWhatTheBuilderRefusesNamingTheProperty() {
    assertThatThrownBy(
            () -> RelayStartupCheck.check(env("relay.kinds.k.max-attempts", "0"), List.of("k")))
        .isInstanceOfSatisfying(
            InvalidConfigurationPropertyValueException.class,
            e -> assertThat(e.getName()).isEqualTo("relay.kinds.k.max-attempts"));
    assertThatThrownBy(() -> RelayStartupCheck.check(env("relay.lease", "5ms"), List.of()))
        .isInstanceOfSatisfying(
            InvalidConfigurationPropertyValueException.class,
            e -> assertThat(e.getName()).isEqualTo("relay.lease"));
    assertThatThrownBy(
            () -> RelayStartupCheck.check(env("relay.maintenance.interval", "0s"), List.of()))
        .isInstanceOfSatisfying(
            InvalidConfigurationPropertyValueException.class,
            e -> assertThat(e.getName()).isEqualTo("relay.maintenance.interval"));
    assertThatThrownBy(
            () ->
                RelayStartupCheck.check(
                    env("relay.schedules.n.kind", "k", "relay.schedules.n.every", "0s"),
                    List.of("k")))
        .isInstanceOfSatisfying(
            InvalidConfigurationPropertyValueException.class,
            e -> assertThat(e.getName()).isEqualTo("relay.schedules.n.every"));
  }

  @Test
  void aMaintenanceValueOutOfRangeIsRefusedInThePropertysOwnTermsNotCoresJavaNames() {
    String[][] cases = {
      {"relay.maintenance.work-retention", "1s", "must be between 1m and 36500d, was 1s"},
      {"relay.maintenance.history-retention", "30s", "must be between 1m and 36500d, was 30s"},
      {"relay.maintenance.identity-horizon", "36501d", "must be between 1m and 36500d, was 36501d"},
      {"relay.maintenance.interval", "500ms", "must be between 1s and 24h, was 500ms"},
      {"relay.maintenance.batch-size", "0", "must be between 1 and 10000, was 0"},
      {"relay.maintenance.max-batches", "100001", "must be between 1 and 100000, was 100001"},
    };
    for (String[] c : cases) {
      assertThatThrownBy(() -> RelayStartupCheck.check(env(c[0], c[1]), List.of()))
          .as(c[0] + "=" + c[1])
          .isInstanceOfSatisfying(
              InvalidConfigurationPropertyValueException.class,
              e -> {
                assertThat(e.getName()).isEqualTo(c[0]);
                assertThat(e.getReason()).isEqualTo(c[2]);
              });
    }
  }

  @Test
  void durationsAreWrittenAsSpringPropertiesWriteThem() {
    assertThat(RelaySettings.duration(Duration.ofMinutes(1))).isEqualTo("1m");
    assertThat(RelaySettings.duration(Duration.ofDays(36_500))).isEqualTo("36500d");
    assertThat(RelaySettings.duration(Duration.ofMinutes(90))).isEqualTo("90m");
    assertThat(RelaySettings.duration(Duration.ofHours(24))).isEqualTo("1d");
    assertThat(RelaySettings.duration(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(RelaySettings.duration(Duration.ZERO)).isEqualTo("0s");
    assertThat(RelaySettings.duration(Duration.ofSeconds(-1))).isEqualTo("-1s");
  }

  @Test
  void aValueThatDoesNotBindNamesItsProperty() {
    assertThatThrownBy(() -> RelayStartupCheck.check(env("relay.concurrency", "many"), List.of()))
        .isInstanceOfSatisfying(
            BindException.class,
            e -> assertThat(e.getProperty().getName().toString()).isEqualTo("relay.concurrency"));
  }

  @Test
  void aKindWithoutAHandlerIsRefused() {
    assertThatThrownBy(
            () -> RelayStartupCheck.check(env("relay.kinds.orphan.max-attempts", "3"), List.of()))
        .isInstanceOfSatisfying(
            InvalidConfigurationPropertyValueException.class,
            e -> assertThat(e.getName()).isEqualTo("relay.kinds.orphan"));
  }
}
