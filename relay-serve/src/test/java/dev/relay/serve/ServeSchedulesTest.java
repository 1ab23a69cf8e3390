package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Schedule;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Schedules in the {@code relay serve} config file. */
class ServeSchedulesTest {
  private static final String KINDS =
      "\"kinds\": {\"tick\": {\"handler\": \"log\"}}, \"console\": {\"enabled\": false}";

  private static ServeConfig parse(String schedules) {
    return ServeConfig.parse("{" + KINDS + ", \"schedules\": " + schedules + "}", "relay.json");
  }

  @Nested
  class Parsing {
    @Test
    void cronAndIntervalSchedulesWithTheirPolicies() {
      ServeConfig c =
          parse(
              "{\"nightly\": {\"kind\": \"report\", \"cron\": \"30 2 * * *\","
                  + " \"zone\": \"Europe/Berlin\"},"
                  + " \"pulse\": {\"kind\": \"tick\", \"every\": \"5m\", \"missed\": \"each 1h\"},"
                  + " \"quiet\": {\"kind\": \"tick\", \"every\": \"1h\", \"missed\": \"skip\"}}");
      assertThat(c.schedules().get("nightly").schedule())
          .isEqualTo(Schedule.cron("30 2 * * *", "Europe/Berlin"));
      assertThat(c.schedules().get("pulse").schedule().definition())
          .isEqualTo("every PT5M missed=each(PT1H)");
      assertThat(c.schedules().get("quiet").schedule().missedSlots())
          .isEqualTo(Schedule.MissedSlots.skip());
      assertThat(ServeConfig.parse("{" + KINDS + "}", "relay.json").schedules()).isEmpty();
    }

    @Test
    void badSchedulesAreRefusedNamingTheScheduleAndTheProblem() {
      assertThatThrownBy(
              () ->
                  parse("{\"n\": {\"kind\": \"k\", \"cron\": \"61 * * * *\", \"zone\": \"UTC\"}}"))
          .hasMessageContaining("schedule n")
          .hasMessageContaining("invalid_cron");
      assertThatThrownBy(
              () ->
                  parse(
                      "{\"n\": {\"kind\": \"k\", \"cron\": \"0 * * * *\", \"zone\":"
                          + " \"Mars/Base\"}}"))
          .hasMessageContaining("unknown_zone");
      assertThatThrownBy(() -> parse("{\"n\": {\"kind\": \"k\", \"cron\": \"0 * * * *\"}}"))
          .hasMessageContaining("cron needs zone");
      assertThatThrownBy(() -> parse("{\"n\": {\"kind\": \"k\", \"every\": \"0s\"}}"))
          .hasMessageContaining("invalid_interval");
      assertThatThrownBy(
              () -> parse("{\"n\": {\"kind\": \"k\", \"every\": \"1m\", \"cron\": \"0 * * * *\"}}"))
          .hasMessageContaining("either cron (with zone) or every");
      assertThatThrownBy(
              () -> parse("{\"n\": {\"kind\": \"k\", \"every\": \"1m\", \"missed\": \"all\"}}"))
          .hasMessageContaining("missed must be skip, latest or each <window>");
      assertThatThrownBy(() -> parse("{\"n@x\": {\"kind\": \"k\", \"every\": \"1m\"}}"))
          .hasMessageContaining("invalid_name");
      assertThatThrownBy(() -> parse("{\"n\": {\"kind\": \"k\", \"every\": \"1m\", \"when\": 1}}"))
          .hasMessageContaining("unknown field 'when'");
    }
  }
}
