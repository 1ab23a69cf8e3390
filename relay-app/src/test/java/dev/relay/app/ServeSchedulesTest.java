package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.Schedule;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Schedules in the {@code relay serve} config file. */
class ServeSchedulesTest {
  private static final String KINDS = "\"kinds\": {\"tick\": {\"handler\": \"log\"}}";

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
                      "{\"n\": {\"kind\": \"k\", \"cron\": \"0 * * * *\", \"zone\": \"Mars/Base\"}}"))
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

  @Nested
  @RelayDatabaseTest
  class Serving {
    @Test
    void serveDecidesSlotsAndItsWorkersRunThem(TestDatabase db, @TempDir Path dir)
        throws Exception {
      Path config = dir.resolve("relay.json");
      Files.writeString(
          config,
          "{\"poll_interval\": \"200ms\", \"shutdown_grace\": \"5s\", "
              + KINDS
              + ", \"schedules\": {\"pulse\": {\"kind\": \"tick\", \"every\": \"1s\"}}}");
      Process serve =
          Cli.builder(
                  Map.of(),
                  CommandLineTest.on(
                      db, "serve", "--config", config.toString(), "--http-port", "0"))
              .redirectOutput(dir.resolve("serve.out").toFile())
              .redirectError(dir.resolve("serve.err").toFile())
              .start();
      try {
        await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(250))
            .until(
                () ->
                    db.queryLong(
                            "SELECT count(*) FROM {schema}.outbox"
                                + " WHERE work_id LIKE 'pulse@%' AND state = 'done'")
                        >= 2);
      } finally {
        serve.destroy();
        assertThat(serve.waitFor(60, TimeUnit.SECONDS)).as("serve stops on SIGTERM").isTrue();
      }
      assertThat(Files.readString(dir.resolve("serve.out"))).contains("schedules [pulse]");
      assertThat(db.queryLong("SELECT conflicts FROM {schema}.schedule_state")).isZero();
    }
  }
}
