package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Handler;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.jackson.JsonCodec;
import dev.relay.spring.RelayHandler;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@RelayDatabaseTest
class RelayAutoConfigurationTest {
  @Configuration(proxyBeanMethods = false)
  static class OneHandler {
    @Bean
    @RelayHandler(kind = "order_received")
    Handler orderReceived() {
      return claim -> Outcome.done();
    }
  }

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
        .withUserConfiguration(OneHandler.class)
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

  private static void assertRefused(
      TestDatabase db, String setting, String property, String problem) {
    Contexts.on(db)
        .withUserConfiguration(OneHandler.class)
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
