package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What every error line does to the text it prints. */
class MessagesTest {
  @Test
  void passwordsOfJdbcUrlsAreMaskedInBothForms() {
    assertThat(
            Messages.oneLine(
                "was 'jdbc:postgres://h:5432/db?user=postgres&password=SECRET&ssl=true'"))
        .isEqualTo("was 'jdbc:postgres://h:5432/db?user=postgres&password=******&ssl=true'");
    assertThat(Messages.oneLine("jdbc:postgresql://h/db?PASSWORD=SECRET"))
        .isEqualTo("jdbc:postgresql://h/db?PASSWORD=******");
    assertThat(Messages.oneLine("'jdbc:postgresql://mina:SECRET@h:5432/db' is not"))
        .isEqualTo("'jdbc:postgresql://mina:******@h:5432/db' is not");
    assertThat(Messages.oneLine("jdbc:postgresql://h:5432/db?user=mina"))
        .isEqualTo("jdbc:postgresql://h:5432/db?user=mina");
  }

  @Test
  void durationsAreEchoedAsTyped() {
    assertThat(Durations.format(Durations.parse("0s"))).isEqualTo("0s");
    assertThat(Durations.format(Durations.parse("90m"))).isEqualTo("1h30m");
    assertThat(Durations.format(Durations.parse("36501d"))).isEqualTo("36501d");
    assertThat(Durations.format(Durations.parse("PT0.5S"))).isEqualTo("500ms");
  }
}
