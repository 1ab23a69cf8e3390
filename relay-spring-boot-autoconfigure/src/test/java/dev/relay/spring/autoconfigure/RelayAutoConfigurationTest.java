package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.jackson.JsonCodec;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

@RelayDatabaseTest
class RelayAutoConfigurationTest {
  @Test
  void withoutADataSourceNothingIsConfigured() {
    Contexts.bare()
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(RelayOutbox.class);
              assertThat(context).doesNotHaveBean(RelayRuntime.class);
            });
  }

  @Test
  void twoDataSourcesWithoutPrimaryFailStartUpNamingTheQualifierProperty(TestDatabase db) {
    DataSource second = db.newDataSource("second", 1);
    Contexts.on(db)
        .withBean("reporting", DataSource.class, () -> second)
        .run(
            context ->
                assertThat(context)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("relay.data-source-bean")
                    .hasMessageContaining("dataSource, reporting"));
    Contexts.on(db)
        .withBean("reporting", DataSource.class, () -> second)
        .withPropertyValues("relay.data-source-bean=dataSource")
        .run(context -> assertThat(context).hasSingleBean(RelayOutbox.class));
  }

  @Test
  void applicationBeansBackOff(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .withBean(
            "myRelay",
            Relay.class,
            () ->
                Relay.builder(db.dataSource())
                    .schema(db.schema())
                    .handle("order_received", claim -> Outcome.done())
                    .build())
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(RelayRuntime.class);
              assertThat(context).hasSingleBean(RelayOutbox.class);
            });
    RelayOutbox own = new RelayOutbox(db.dataSource(), Outbox.create(), JsonCodec.create());
    Contexts.on(db)
        .withBean("myOutbox", RelayOutbox.class, () -> own)
        .run(context -> assertThat(context.getBean(RelayOutbox.class)).isSameAs(own));
  }

  @Test
  void producerOnlyContextHasNoWorkerButAnOwnPool(TestDatabase db) {
    Contexts.on(db)
        .run(
            context -> {
              assertThat(context.getBean(RelayRuntime.class).relay()).isEmpty();
              assertThat(context.getBean(RelayConnections.class).shared()).isFalse();
            });
  }

  @Test
  void anOutOfRangeSettingFailsStartUpNamingThePropertyAndItsRange(TestDatabase db) {
    assertRefused(db, "relay.batch-size=0", "relay.batch-size", "between 1 and 1000");
    assertRefused(
        db,
        "relay.kinds.order_received.max-attempts=0",
        "relay.kinds.order_received.max-attempts",
        "between 1 and 10000");
    assertRefused(db, "relay.pool-size=0", "relay.pool-size", "between 1 and 100");
    assertRefused(
        db,
        "relay.kinds.order_recieved.max-attempts=3",
        "relay.kinds.order_recieved",
        "no handler");
    assertRefused(
        db, "relay.shutdown-grace=30s", "relay.shutdown-grace", "timeout-per-shutdown-phase");
  }

  @Test
  void flowLimitsFromPropertiesReachTheKindsPolicyInTheDatabase(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .withPropertyValues(
            "relay.kinds.order_received.max-running=2",
            "relay.kinds.order_received.max-running-per-group=1",
            "relay.kinds.order_received.rate-limit=50",
            "relay.kinds.order_received.rate-interval=10s")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              // Relay.start() registers the kind's limits in the limiter table, read by every
              // worker's claim
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(
                      () ->
                          assertThat(
                                  db.queryString(
                                      "SELECT max_running || ' ' || max_running_per_group || ' '"
                                          + " || rate_limit || ' ' || rate_interval"
                                          + " FROM {schema}.limiter"
                                          + " WHERE kind = 'order_received'"))
                              .isEqualTo("2 1 50 00:00:10"));
            });
  }

  @Test
  void anOutOfRangeLimitFailsStartUpNamingTheProperty(TestDatabase db) {
    assertRefused(
        db,
        "relay.kinds.order_received.max-running=0",
        "relay.kinds.order_received.max-running",
        "between 1 and 1000000");
    assertRefused(
        db,
        "relay.kinds.order_received.max-running-per-group=1000001",
        "relay.kinds.order_received.max-running-per-group",
        "between 1 and 1000000");
    assertRefused(
        db,
        "relay.kinds.order_received.rate-limit=0",
        "relay.kinds.order_received.rate-limit",
        "between 1 and 1000000");
    assertRefused(
        db,
        "relay.kinds.order_received.rate-interval=10s",
        "relay.kinds.order_received.rate-limit",
        "missing");
    assertRefused(
        db,
        new String[] {
          "relay.kinds.order_received.rate-limit=5",
          "relay.kinds.order_received.rate-interval=500ms"
        },
        "relay.kinds.order_received.rate-interval",
        "between PT1S and PT24H");
  }

  private static void assertRefused(
      TestDatabase db, String[] settings, String property, String problem) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .withPropertyValues(settings)
        .run(
            context -> {
              Throwable e = context.getStartupFailure();
              while (e != null && !(e instanceof InvalidConfigurationPropertyValueException)) {
                e = e.getCause();
              }
              assertThat(e).as("refusal of " + String.join(", ", settings)).isNotNull();
              assertThat(((InvalidConfigurationPropertyValueException) e).getName())
                  .isEqualTo(property);
              assertThat(e).hasMessageContaining(problem);
            });
  }

  private static void assertRefused(
      TestDatabase db, String setting, String property, String problem) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.OneHandler.class)
        .withPropertyValues(setting)
        .run(
            context -> {
              Throwable e = context.getStartupFailure();
              while (e != null && !(e instanceof InvalidConfigurationPropertyValueException)) {
                e = e.getCause();
              }
              assertThat(e).as("refusal of " + setting).isNotNull();
              assertThat(((InvalidConfigurationPropertyValueException) e).getName())
                  .isEqualTo(property);
              assertThat(e).hasMessageContaining(problem);
            });
  }
}
