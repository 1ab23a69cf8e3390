package dev.relay.spring.autoconfigure;

import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.spring.RelayHandler;
import dev.relay.test.TestDatabase;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/** Application contexts for the tests: Relay's auto-configuration on the test's database. */
final class Contexts {
  private Contexts() {}

  /** The application's JDBC transaction manager on its DataSource. */
  @Configuration(proxyBeanMethods = false)
  static class Jdbc {
    @Bean
    DataSourceTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }
  }

  /** One handler, for kind {@code order_received}, that completes its work: a worker runs. */
  @Configuration(proxyBeanMethods = false)
  static class OneHandler {
    @Bean
    @RelayHandler(kind = "order_received")
    Handler orderReceived() {
      return claim -> Outcome.done();
    }
  }

  /**
   * A real, non-web {@link SpringApplication} of {@code source} whose one DataSource is a pool of
   * the test's database, as an application would have; it reads {@code application.properties} and
   * the command line as any Boot application does.
   */
  static SpringApplication application(TestDatabase db, Class<?> source) {
    DataSource application = db.newDataSource("application", 2);
    SpringApplication app = new SpringApplication(source);
    app.setWebApplicationType(WebApplicationType.NONE);
    app.addInitializers(
        c ->
            ((GenericApplicationContext) c)
                .registerBean("dataSource", DataSource.class, () -> application));
    return app;
  }

  /** The auto-configuration alone, with no DataSource. */
  static ApplicationContextRunner bare() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RelayAutoConfiguration.class));
  }

  /**
   * The auto-configuration with the test's schema, one DataSource (a pool of the test's own, as an
   * application would have) and a short poll so that tests do not wait for the default 2 s.
   */
  static ApplicationContextRunner on(TestDatabase db) {
    DataSource application = db.newDataSource("application", 4);
    return bare()
        .withBean("dataSource", DataSource.class, () -> application)
        .withPropertyValues(
            "relay.schema=" + db.schema(),
            "relay.poll-interval=200ms",
            "relay.shutdown-grace=2s",
            "spring.lifecycle.timeout-per-shutdown-phase=10s");
  }
}
