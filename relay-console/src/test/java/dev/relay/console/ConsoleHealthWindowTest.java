package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.admin.Admin;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * {@code relay.console.health-window} takes core's bounds for {@code Admin.health} ({@link
 * Admin#MIN_HEALTH_WINDOW} to {@link Admin#MAX_HEALTH_WINDOW}): a value outside them stops the
 * application at start-up, naming the property and the bounds (before, it started and the overview
 * refused every visit), and each bound itself serves the overview over that window.
 */
@RelayDatabaseTest
class ConsoleHealthWindowTest {
  @Test
  void aWindowOutsideCoresBoundsStopsStartUpNamingThePropertyAndTheBounds(TestDatabase db) {
    for (Duration window :
        List.of(Admin.MIN_HEALTH_WINDOW.minusMillis(1), Admin.MAX_HEALTH_WINDOW.plusSeconds(1))) {
      assertThatThrownBy(() -> ConsoleApp.start(db, "relay.console.health-window=" + window))
          .as(window.toString())
          .rootCause()
          .isInstanceOf(InvalidConfigurationPropertyValueException.class)
          .hasMessageContaining("relay.console.health-window")
          .hasMessageContaining("must be between 1s and 365d");
    }
  }

  @Test
  void eachBoundServesTheOverviewOverThatWindow(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    for (Duration window : List.of(Admin.MIN_HEALTH_WINDOW, Admin.MAX_HEALTH_WINDOW)) {
      try (ConsoleApp app = ConsoleApp.start(db, "relay.console.health-window=" + window)) {
        HttpResponse<String> overview = Browser.operator(app).get("/relay");
        assertThat(overview.statusCode()).as(window.toString()).isEqualTo(200);
        assertThat(overview.body())
            .as(window.toString())
            .contains("Failures and completions over the last " + Format.age(window) + ".");
      }
    }
  }
}
