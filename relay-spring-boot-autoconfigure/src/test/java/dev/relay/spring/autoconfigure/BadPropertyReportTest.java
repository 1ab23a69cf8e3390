package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Outbox;
import dev.relay.admin.Maintenance;
import dev.relay.spring.InboxTemplate;
import dev.relay.spring.RelayHttpReceivers;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Every {@code relay.*} property with a bad value stops a real {@link SpringApplication} with
 * Boot's "APPLICATION FAILED TO START" report naming that property, read from the console output:
 * in an application whose own beans take none of Relay's, in one whose service takes {@link
 * RelayOutbox} (as docs/spring.md shows), and whichever other Relay bean a service takes.
 */
@RelayDatabaseTest
@ExtendWith(OutputCaptureExtension.class)
class BadPropertyReportTest {
  private static final String KIND = "relay.kinds.order_received.";
  private static final String SCHEDULE = "relay.schedules.nightly.";
  private static final String[] A_SCHEDULE = {
    SCHEDULE + "kind=order_received", SCHEDULE + "every=1h"
  };

  /** One bad value per property, and what else the case needs to reach the check. */
  record Case(String property, String value, String... more) {
    @Override
    public String toString() {
      return property + "=" + value;
    }
  }

  static Stream<Case> badValues() {
    return Stream.of(
        new Case("relay.enabled", "maybe"),
        new Case("relay.migrate", "maybe"),
        new Case("relay.schema", "Not-A-Schema"),
        new Case("relay.data-source-bean", "noSuchDataSource"),
        new Case("relay.pool-size", "0"),
        new Case("relay.direct-connection.url", "postgres://db:5432/shop"),
        new Case("relay.direct-connection.username", "relay"),
        new Case("relay.direct-connection.password", "secret"),
        new Case("relay.worker-id", "w".repeat(201)),
        new Case("relay.queues", "no spaces allowed"),
        new Case("relay.batch-size", "0"),
        new Case("relay.concurrency", "0"),
        new Case("relay.buffer-size", "-1"),
        new Case("relay.lease", "50ms"),
        new Case("relay.renew-interval", "5ms"),
        new Case("relay.start-margin", "-1s"),
        new Case("relay.poll-interval", "5ms"),
        new Case("relay.poll-jitter", "1.5"),
        new Case("relay.local-handoff", "maybe"),
        new Case("relay.notifications", "maybe"),
        new Case("relay.shutdown-grace", "-1s"),
        new Case("relay.completion-batch-size", "0"),
        new Case("relay.completion-max-delay", "11s"),
        new Case("relay.statement-timeout", "0ms"),
        new Case("relay.lock-timeout", "0ms"),
        new Case("relay.idle-in-transaction-timeout", "0ms"),
        new Case("relay.max-payload-bytes", "-5"),
        new Case("relay.health-details-max-age", "-1s"),
        new Case("relay.health-timeout", "10ms"),
        new Case("relay.metrics-refresh-interval", "0s"),
        new Case("relay.metrics-enabled", "maybe"),
        new Case("relay.maintenance.enabled", "maybe"),
        new Case("relay.maintenance.interval", "0s"),
        new Case("relay.maintenance.work-retention", "1s"),
        new Case("relay.maintenance.history-retention", "1s"),
        new Case("relay.maintenance.identity-horizon", "1s"),
        new Case("relay.maintenance.batch-size", "0"),
        new Case("relay.maintenance.max-batches", "0"),
        new Case(KIND + "backoff-base", "0ms"),
        new Case(KIND + "backoff-cap", "1ms"),
        new Case(KIND + "max-attempts", "0"),
        new Case(KIND + "max-elapsed", "0ms"),
        new Case(KIND + "max-run-time", "0ms"),
        new Case(KIND + "dedup-horizon", "-1s"),
        new Case(KIND + "unknown-outcome", "maybe"),
        new Case(KIND + "max-running", "0"),
        new Case(KIND + "max-running-per-group", "0"),
        new Case(KIND + "rate-limit", "0", KIND + "rate-interval=1s"),
        new Case(KIND + "rate-interval", "500ms", KIND + "rate-limit=5"),
        new Case("relay.scheduler-poll-interval", "1ms", A_SCHEDULE),
        new Case(SCHEDULE + "kind", "not a kind!", SCHEDULE + "every=1h"),
        new Case(
            SCHEDULE + "cron",
            "not a cron",
            SCHEDULE + "kind=order_received",
            SCHEDULE + "zone=UTC"),
        new Case(
            SCHEDULE + "zone",
            "Mars/Olympus",
            SCHEDULE + "kind=order_received",
            SCHEDULE + "cron=0 2 * * *"),
        new Case(SCHEDULE + "every", "0s", SCHEDULE + "kind=order_received"),
        new Case(SCHEDULE + "missed", "sometimes", A_SCHEDULE));
  }

  /** A handler, so that the runtime (and the kind's policy) is built. */
  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration({
    RelayAutoConfiguration.class,
    RelayMaintenanceAutoConfiguration.class,
    RelayScheduleAutoConfiguration.class,
    RelayWebAutoConfiguration.class
  })
  @Import(Contexts.OneHandler.class)
  static class App {}

  /**
   * docs/spring.md's application: a service of its own takes {@link RelayOutbox}, so the context
   * creates Relay's beans for it before Relay's auto-configuration would.
   */
  @Configuration(proxyBeanMethods = false)
  @Import({App.class, Purchases.class})
  static class AppWithAService {
    @Bean
    JdbcTemplate jdbcTemplate(DataSource dataSource) {
      return new JdbcTemplate(dataSource);
    }
  }

  /** Like docs/spring.md's {@code Purchases}: the business rows and the outbox. */
  @Service
  static class Purchases {
    Purchases(JdbcTemplate jdbc, RelayOutbox outbox) {}
  }

  /** The other beans of Relay's that an application's own bean may take first. */
  @Service
  static class TakesOutbox {
    TakesOutbox(Outbox outbox) {}
  }

  @Service
  static class TakesInboxTemplate {
    TakesInboxTemplate(InboxTemplate inbox) {}
  }

  @Service
  static class TakesHttpReceivers {
    TakesHttpReceivers(RelayHttpReceivers receivers) {}
  }

  @Service
  static class TakesConnections {
    TakesConnections(RelayConnections connections) {}
  }

  @Service
  static class TakesMaintenance {
    TakesMaintenance(Maintenance maintenance) {}
  }

  @Service
  static class TakesSchedules {
    TakesSchedules(RelaySchedules schedules) {}
  }

  /** Values refused by different parts: the outbox, the runtime, maintenance, a schedule. */
  static Stream<Arguments> badValuesForEachBeanAServiceTakes() {
    List<Case> cases =
        List.of(
            new Case("relay.schema", "bad-schema!"),
            new Case("relay.max-payload-bytes", "-5"),
            new Case("relay.concurrency", "0"),
            new Case(KIND + "max-attempts", "0"),
            new Case("relay.maintenance.interval", "0s"),
            new Case(
                SCHEDULE + "cron",
                "not a cron",
                SCHEDULE + "kind=order_received",
                SCHEDULE + "zone=UTC"));
    List<Class<?>> services =
        List.of(
            TakesOutbox.class,
            TakesInboxTemplate.class,
            TakesHttpReceivers.class,
            TakesConnections.class,
            TakesMaintenance.class,
            TakesSchedules.class);
    return services.stream()
        .flatMap(s -> cases.stream().map(c -> Arguments.of(s.getSimpleName(), s, c)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badValues")
  void aBadValueStopsStartUpWithBootsReportNamingTheProperty(
      Case bad, TestDatabase db, CapturedOutput output) {
    assertReport(App.class, bad, db, output);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badValues")
  void aBadValueStopsStartUpWithBootsReportAlsoWhenAServiceTakesRelayOutbox(
      Case bad, TestDatabase db, CapturedOutput output) {
    assertReport(AppWithAService.class, bad, db, output);
  }

  @ParameterizedTest(name = "{0} with {2}")
  @MethodSource("badValuesForEachBeanAServiceTakes")
  void aBadValueStopsStartUpWithBootsReportWhicheverRelayBeanAServiceTakes(
      String name, Class<?> service, Case bad, TestDatabase db, CapturedOutput output) {
    SpringApplication app = Contexts.application(db, App.class);
    app.addPrimarySources(List.of(service));
    assertReport(app, bad, db, output);
  }

  /** The report docs/spring.md shows, word for word, in the application docs/spring.md shows. */
  @Test
  void theReportDocsSpringMdShows(TestDatabase db, CapturedOutput output) {
    assertReport(AppWithAService.class, new Case("relay.max-payload-bytes", "-5"), db, output);

    String out = output.getAll();
    assertThat(out.substring(out.lastIndexOf("APPLICATION FAILED TO START")))
        .contains(
            "Invalid value '-5' for configuration property 'relay.max-payload-bytes'"
                + " (originating from '\"relay.max-payload-bytes\" from property source"
                + " \"commandLineArgs\"'). Validation failed for the following reason:",
            "must be between 1 and 67108864, was -5");
  }

  /**
   * A lease that outlasts the default deduplication horizon is a problem of the kinds that take
   * that default: the report names the handler's kind, never a stand-in kind of the check's.
   */
  @Test
  void aLeasePastTheDefaultHorizonNamesTheHandlersKind(TestDatabase db, CapturedOutput output) {
    SpringApplication app = Contexts.application(db, AppWithAService.class);

    assertThatThrownBy(() -> app.run("--relay.schema=" + db.schema(), "--relay.lease=24h").close())
        .isNotNull();
    String out = output.getAll();
    assertThat(out).doesNotContain("relay_settings_check");
    assertThat(out.substring(out.lastIndexOf("APPLICATION FAILED TO START")))
        .contains(KIND + "dedup-horizon", "is shorter than the lease (PT24H)");
  }

  private static void assertReport(
      Class<?> source, Case bad, TestDatabase db, CapturedOutput output) {
    assertReport(Contexts.application(db, source), bad, db, output);
  }

  private static void assertReport(
      SpringApplication app, Case bad, TestDatabase db, CapturedOutput output) {
    List<String> args = new ArrayList<>();
    if (!bad.property().equals("relay.schema")) {
      args.add("--relay.schema=" + db.schema());
    }
    args.add("--" + bad.property() + "=" + bad.value());
    for (String m : bad.more()) {
      args.add("--" + m);
    }

    assertThatThrownBy(() -> app.run(args.toArray(String[]::new)).close())
        .as("start-up with " + bad)
        .isNotNull();

    String out = output.getAll();
    assertThat(out).as("start-up output with " + bad).contains("APPLICATION FAILED TO START");
    // Boot's report names the property (a map key such as the kind shows in the origin line)
    String report = out.substring(out.lastIndexOf("APPLICATION FAILED TO START"));
    assertThat(report).as("the report for " + bad).contains(bad.property());
    assertThat(out).doesNotContain("Can't overwrite cause");
  }

  /** Every property in the generated metadata has its case above. */
  @Test
  void everyPropertyOfTheMetadataHasABadValueCase() throws Exception {
    Set<String> documented = new TreeSet<>();
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      JsonNode root = JsonMapper.builder().build().readTree(in);
      for (JsonNode p : root.get("properties")) {
        String name = p.get("name").asString();
        if (!name.equals("relay.kinds") && !name.equals("relay.schedules")) {
          documented.add(name);
        }
      }
    }
    Set<String> tested = new TreeSet<>();
    badValues().map(Case::property).forEach(tested::add);
    assertThat(tested).containsAll(documented);
  }
}
