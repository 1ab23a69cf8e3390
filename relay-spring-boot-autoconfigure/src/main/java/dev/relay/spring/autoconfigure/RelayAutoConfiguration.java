package dev.relay.spring.autoconfigure;

import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.RelayTracing;
import dev.relay.admin.Admin;
import dev.relay.jackson.JsonCodec;
import dev.relay.micrometer.RelayMetrics;
import dev.relay.receiver.Fence;
import dev.relay.receiver.Inbox;
import dev.relay.spring.InboxTemplate;
import dev.relay.spring.RelayOutbox;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.postgresql.ds.common.BaseDataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.core.env.Environment;
import tools.jackson.databind.ObjectMapper;

/**
 * Relay in a Spring Boot application with one DataSource: the runtime on a small pool of its own,
 * {@link RelayOutbox} in the application's transactions, {@code @RelayHandler} methods and {@code
 * Handler} beans, the schema migrated at start-up ({@code relay.migrate}), a health contributor and
 * meters. Each bean backs off when the application defines its own; a {@link Relay} bean of the
 * application's replaces the runtime. Without a DataSource nothing is configured; with several, set
 * {@code relay.data-source-bean} (unless one is primary).
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
      // the Tracer and Propagator beans RelayAutoConfiguration.Tracing looks for
      "org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration",
      "org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure"
          + ".OpenTelemetryTracingAutoConfiguration",
      "org.springframework.boot.micrometer.tracing.brave.autoconfigure.BraveAutoConfiguration"
    })
@ConditionalOnClass(Relay.class)
@ConditionalOnBean(DataSource.class)
@ConditionalOnSwitch("relay.enabled")
@EnableConfigurationProperties(RelayProperties.class)
public class RelayAutoConfiguration {
  /** Finds {@code @RelayHandler} methods; static so it is created before other beans. */
  @Bean
  static RelayHandlerMethods relayHandlerMethods() {
    return new RelayHandlerMethods();
  }

  /**
   * Checks the {@code relay.*} values as soon as they are bound, so that a bad one fails start-up
   * with Boot's report naming the property whichever of Relay's beans is created first (an
   * application's service that takes {@link RelayOutbox} creates the outbox before the runtime's
   * connections). Static, as a bean post-processor must be.
   */
  @Bean
  static RelayStartupCheck.OnBind relayPropertiesCheck(Environment env) {
    return new RelayStartupCheck.OnBind(env);
  }

  /** The runtime's own connections, on a schema migrated unless {@code relay.migrate=false}. */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  RelayConnections relayConnections(
      RelayProperties properties,
      ConfigurableListableBeanFactory beans,
      ObjectProvider<DataSource> dataSources) {
    DataSource application = applicationDataSource(properties, beans, dataSources);
    RelayConnections connections =
        RelayConnections.open(
            application,
            target(application),
            properties.getPoolSize(),
            direct(properties, application));
    if (properties.isMigrate()) {
      try {
        Migrator.migrate(connections.dataSource(), properties.getSchema());
      } catch (RuntimeException e) {
        connections.close();
        throw e;
      }
    }
    return connections;
  }

  /** Writes typed payloads with the application's Jackson mapper (a default one without it). */
  @Bean
  @ConditionalOnMissingBean
  JsonCodec relayJsonCodec(ObjectProvider<ObjectMapper> mappers) {
    ObjectMapper mapper = mappers.getIfUnique();
    return mapper == null ? JsonCodec.create() : JsonCodec.using(mapper);
  }

  /** The outbox: schema, payload limit, notifications from {@code relay.*}. */
  @Bean
  @ConditionalOnMissingBean
  Outbox relayOutboxStatements(RelayProperties properties, ObjectProvider<RelayTracing> tracing) {
    return Outbox.builder()
        .tracing(tracing.getIfUnique(() -> RelayTracing.NONE))
        .schema(properties.getSchema())
        .maxPayloadBytes(properties.getMaxPayloadBytes())
        .notifications(properties.isNotifications())
        .build();
  }

  /** Enqueue in the application's transaction. */
  @Bean
  @ConditionalOnMissingBean
  RelayOutbox relayOutbox(
      RelayProperties properties,
      ConfigurableListableBeanFactory beans,
      ObjectProvider<DataSource> dataSources,
      Outbox outbox,
      JsonCodec codec,
      RelayConnections migratedFirst,
      ObjectProvider<RelayRuntime> runtime) {
    // With relay.local-handoff, work this application's worker takes is handed off to it, started
    // from an after-commit synchronization; the runtime exists once every singleton does.
    return new RelayOutbox(
        applicationDataSource(properties, beans, dataSources),
        outbox,
        codec,
        () -> {
          RelayRuntime r = runtime.getIfAvailable();
          return r == null ? null : r.relay().orElse(null);
        });
  }

  /** The inbox and fence in the application's transactions, for receiving services. */
  @Bean
  @ConditionalOnMissingBean
  InboxTemplate relayInboxTemplate(
      RelayProperties properties,
      ConfigurableListableBeanFactory beans,
      ObjectProvider<DataSource> dataSources,
      RelayConnections migratedFirst,
      ObjectProvider<RelayTracing> tracing) {
    return new InboxTemplate(
        applicationDataSource(properties, beans, dataSources),
        Inbox.builder().schema(properties.getSchema()).build(),
        Fence.forSchema(properties.getSchema()),
        tracing.getIfUnique(() -> RelayTracing.NONE));
  }

  /** The one runtime of the context; none when the application defines its own {@link Relay}. */
  @Bean
  @ConditionalOnMissingBean({Relay.class, RelayRuntime.class})
  RelayRuntime relayRuntime(
      RelayProperties properties,
      RelayConnections connections,
      RelayHandlerMethods methods,
      ConfigurableListableBeanFactory beans,
      JsonCodec codec,
      ObjectProvider<RelayEventListener> listeners,
      ObjectProvider<RelayCustomizer> customizers,
      ObjectProvider<RelayTracing> tracing,
      Environment env) {
    // a RelayTracing is a listener too, but it is set as the tracing hook, not as the listener
    List<RelayEventListener> all =
        listeners.orderedStream().filter(l -> !(l instanceof RelayTracing)).toList();
    if (all.size() > 1) {
      throw new IllegalStateException(
          "Relay takes one RelayEventListener and the context has "
              + all.size()
              + "; combine them in one bean, or set the listener in a RelayCustomizer");
    }
    return new RelayRuntime(
        properties,
        connections,
        methods,
        beans,
        codec,
        all.isEmpty() ? RelayEventListener.NONE : all.get(0),
        withTracing(tracing.getIfUnique(), customizers.orderedStream().toList()),
        env);
  }

  /** The application's customizers, after one that sets the tracing hook when there is one. */
  private static List<RelayCustomizer> withTracing(
      RelayTracing tracing, List<RelayCustomizer> customizers) {
    if (tracing == null) {
      return customizers;
    }
    List<RelayCustomizer> all = new ArrayList<>();
    all.add(b -> b.tracing(tracing));
    all.addAll(customizers);
    return all;
  }

  /**
   * Tracing through Micrometer Tracing, when the application has it configured (a {@link Tracer}
   * and a {@link Propagator}, whichever bridge provides them): a span per attempt, the producer's
   * context stored at enqueue, receivers continuing the sender's trace. Without them nothing is
   * configured and Relay traces nothing.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({Tracer.class, Propagator.class})
  static class Tracing {
    @Bean
    @ConditionalOnBean({Tracer.class, Propagator.class})
    @ConditionalOnMissingBean(RelayTracing.class)
    RelayTracing relayTracing(Tracer tracer, Propagator propagator) {
      return new RelayMicrometerTracing(tracer, propagator);
    }
  }

  /** relay-micrometer's meters, bound to the application's registry when there is one. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({RelayMetrics.class, MeterRegistry.class})
  @ConditionalOnSwitch("relay.metrics-enabled")
  static class Metrics {
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    RelayMetricsBinding relayMetricsBinding(
        RelayProperties properties,
        RelayConnections connections,
        ObjectProvider<MeterRegistry> registries) {
      RelayMetrics metrics;
      try {
        metrics =
            RelayMetrics.builder(Admin.create(connections.dataSource(), properties.getSchema()))
                .refreshInterval(properties.getMetricsRefreshInterval())
                .build();
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(
            "relay.metrics-refresh-interval",
            properties.getMetricsRefreshInterval(),
            e.getMessage());
      }
      return new RelayMetricsBinding(metrics, registries.getIfUnique());
    }

    @Bean
    RelayEventListener relayMetricsListener(RelayMetricsBinding binding) {
      return binding.listener();
    }

    /**
     * Registers the meters of the runtime's (queue, kind) pairs at zero once the context is
     * refreshed (the runtime is built by then), so that a scrape right after start shows them.
     */
    @Bean
    ApplicationListener<ContextRefreshedEvent> relayMetricsAtZero(
        RelayMetricsBinding binding, ObjectProvider<RelayRuntime> runtime) {
      return event ->
          runtime.ifAvailable(
              r -> r.relay().ifPresent(relay -> binding.registerAtZero(relay.config())));
    }
  }

  /** The {@code relay} health contributor. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(AbstractHealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("relay")
  static class Health {
    @Bean
    @ConditionalOnMissingBean(name = "relayHealthIndicator")
    HealthIndicator relayHealthIndicator(
        RelayProperties properties,
        RelayConnections connections,
        ObjectProvider<RelayRuntime> runtime) {
      return new RelayHealthIndicator(
          connections.dataSource(),
          properties.getSchema(),
          runtime.getIfAvailable(),
          properties.getHealthDetailsMaxAge(),
          properties.getHealthTimeout());
    }
  }

  static DataSource applicationDataSource(
      RelayProperties properties,
      ConfigurableListableBeanFactory beans,
      ObjectProvider<DataSource> dataSources) {
    String named = properties.getDataSourceBean();
    if (named != null) {
      if (!beans.containsBean(named) || !beans.isTypeMatch(named, DataSource.class)) {
        throw new InvalidConfigurationPropertyValueException(
            "relay.data-source-bean",
            named,
            "names no DataSource bean; the context's DataSource beans: "
                + String.join(", ", beans.getBeanNamesForType(DataSource.class)));
      }
      return beans.getBean(named, DataSource.class);
    }
    DataSource unique = dataSources.getIfUnique();
    if (unique == null) {
      String names =
          Arrays.stream(beans.getBeanNamesForType(DataSource.class))
              .collect(Collectors.joining(", "));
      throw new IllegalStateException(
          "Relay needs the DataSource that holds its tables, and the context has several ("
              + names
              + ") with none @Primary: set relay.data-source-bean to one of them");
    }
    return unique;
  }

  /** The URL and credentials of the application's DataSource, or null when they cannot be read. */
  static RelayConnections.Target target(DataSource application) {
    try {
      if (application.isWrapperFor(HikariDataSource.class)) {
        HikariDataSource h = application.unwrap(HikariDataSource.class);
        if (h.getJdbcUrl() != null) {
          return new RelayConnections.Target(
              h.getJdbcUrl(),
              h.getUsername(),
              h.getPassword(),
              h.getDataSourceProperties(),
              h.getConnectionInitSql());
        }
      }
      if (application.isWrapperFor(BaseDataSource.class)) {
        BaseDataSource pg = application.unwrap(BaseDataSource.class);
        return new RelayConnections.Target(pg.getURL(), pg.getUser(), pg.getPassword(), null, null);
      }
    } catch (SQLException e) {
      return null;
    }
    return null;
  }

  /**
   * The session connections' target from {@code relay.direct-connection.*}, the user and password
   * falling back to the DataSource's; null when no URL is set.
   */
  private static RelayConnections.Target direct(
      RelayProperties properties, DataSource application) {
    RelayProperties.DirectConnection d = properties.getDirectConnection();
    if (d.getUrl() == null || d.getUrl().isBlank()) {
      return null;
    }
    RelayConnections.Target from = target(application);
    String user = d.getUsername() != null ? d.getUsername() : from == null ? null : from.user();
    String password =
        d.getPassword() != null ? d.getPassword() : from == null ? null : from.password();
    return new RelayConnections.Target(d.getUrl(), user, password, null, null);
  }
}
