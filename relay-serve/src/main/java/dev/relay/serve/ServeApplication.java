package dev.relay.serve;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.PurgePolicy;
import dev.relay.console.ConsoleProperties;
import dev.relay.schedule.Scheduler;
import dev.relay.spring.autoconfigure.RelayConnections;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import jakarta.servlet.DispatcherType;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.savedrequest.NullRequestCache;

/**
 * The Spring Boot application of {@code relay serve}: Relay's starter (connections, meters, the
 * {@code relay} health contributor), the console behind form login, and, from the {@link
 * ServeConfig} registered as a bean by {@link ServeCommand}, the workers for the configured kinds,
 * the schedules and the maintenance loop.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class ServeApplication {
  private static final Logger log = LoggerFactory.getLogger("relay.serve");

  /** The runtime: one worker for every configured kind, started here, closed with the context. */
  @Bean(destroyMethod = "close")
  Relay relay(
      ServeConfig settings,
      ServeOptions options,
      RelayConnections connections,
      ObjectProvider<RelayEventListener> listeners) {
    Relay.Builder builder =
        runtime(settings, options, connections.dataSource())
            .listenConnections(connections.listenConnections());
    RelayEventListener listener = listeners.getIfUnique();
    if (listener != null) {
      builder.listener(listener);
    }
    List<HttpRoute> routes =
        settings.kinds().values().stream()
            .map(ServeConfig.KindConfig::route)
            .filter(Objects::nonNull)
            .toList();
    HttpTransport transport =
        routes.isEmpty() ? null : HttpTransport.builder().routes(routes).build();
    for (Map.Entry<String, ServeConfig.KindConfig> e : settings.kinds().entrySet()) {
      builder.handle(
          e.getKey(),
          e.getValue().policy(),
          e.getValue().route() != null ? transport : LogHandler.INSTANCE);
    }
    Relay relay = builder.build();
    relay.start();
    return relay;
  }

  /**
   * The runtime's settings from the config, without handlers: shared by the runtime bean and by
   * {@link #check}, so a setting the builder refuses is found before anything connects.
   */
  static Relay.Builder runtime(ServeConfig settings, ServeOptions options, DataSource dataSource) {
    Relay.Builder builder =
        Relay.builder(dataSource)
            .schema(options.schema())
            .queues(settings.queues().toArray(String[]::new))
            .concurrency(settings.concurrency())
            .lease(settings.lease())
            .pollInterval(settings.pollInterval())
            .shutdownGrace(settings.shutdownGrace());
    if (options.workerId() != null) {
      builder.workerId(options.workerId());
    }
    return builder;
  }

  /**
   * Builds (never starts) the runtime the config describes, on a data source that is never asked
   * for a connection: the builder's own checks (a kind's policy, a horizon shorter than the lease
   * plus the poll interval) refuse a bad config before the database is reached.
   *
   * @throws dev.relay.InvalidConfigurationException naming the setting the builder refused
   */
  static void check(ServeConfig settings, ServeOptions options) {
    Relay.Builder builder = runtime(settings, options, new PGSimpleDataSource());
    settings.kinds().forEach((kind, c) -> builder.handle(kind, c.policy(), LogHandler.INSTANCE));
    builder.build();
  }

  /** The schedules of the config; closed before the runtime (it depends on it). */
  @Bean(destroyMethod = "close")
  ScheduleRunner serveSchedules(
      ServeConfig settings, ServeOptions options, RelayConnections connections, Relay relay) {
    if (settings.schedules().isEmpty()) {
      return new ScheduleRunner(null);
    }
    // Decides due slots on the pool: it keeps no session state.
    Scheduler.Builder b = Scheduler.builder(connections.dataSource()).schema(options.schema());
    settings.schedules().forEach((name, s) -> b.schedule(name, s.kind(), s.schedule()));
    Scheduler scheduler = b.build();
    scheduler.start();
    return new ScheduleRunner(scheduler);
  }

  /**
   * The maintenance loop (retention purge, tombstones): the advisory lock that makes one process at
   * a time run it lives on a dedicated connection, never a pooled one.
   */
  @Bean(destroyMethod = "close")
  Maintenance relayMaintenance(
      ServeConfig settings, ServeOptions options, RelayConnections connections) {
    PurgePolicy policy = PurgePolicy.DEFAULT;
    if (settings.workRetention() != null) {
      policy = policy.withWorkRetention(settings.workRetention());
    }
    if (settings.historyRetention() != null) {
      policy = policy.withHistoryRetention(settings.historyRetention());
    }
    if (settings.identityHorizon() != null) {
      policy = policy.withIdentityHorizon(settings.identityHorizon());
    }
    Maintenance maintenance =
        Maintenance.create(
            connections.dataSource(),
            connections.listenConnections(),
            new MaintenanceConfig(options.schema(), options.maintenanceInterval(), policy));
    maintenance.start();
    return maintenance;
  }

  /**
   * {@code workers} in {@code /actuator/health}: up while this process's runtime runs (the
   * starter's {@code relay} contributor checks the database and schema, and does not see a runtime
   * the application builds itself).
   */
  @Bean
  HealthIndicator workersHealthIndicator(Relay relay, ServeConfig settings) {
    return () ->
        (relay.isRunning() ? Health.up() : Health.down())
            .withDetail("workerId", relay.workerId())
            .withDetail("kinds", settings.kinds().keySet())
            .build();
  }

  /** Compares the bcrypt hashes of the config's users. */
  @Bean
  PasswordEncoder relayServePasswordEncoder() {
    return new BCryptPasswordEncoder();
  }

  /** The console's users from the config: viewer or operator. */
  @Bean
  UserDetailsService relayServeUsers(
      ServeConfig settings, ObjectProvider<ConsoleProperties> console) {
    ConsoleProperties p = console.getIfAvailable(ConsoleProperties::new);
    List<UserDetails> users =
        settings.users().stream()
            .map(
                u ->
                    User.withUsername(u.name())
                        .password(u.hash())
                        .roles(
                            u.role().equals("operator") ? p.getOperatorRole() : p.getViewerRole())
                        .build())
            .toList();
    return new InMemoryUserDetailsManager(users);
  }

  /**
   * Everything outside the console (which brings its own chain for its path): the health and
   * Prometheus endpoints answer without sign-in (the server binds 127.0.0.1 unless configured),
   * {@code /} leads to the console, {@code /favicon.ico} is answered (a browser asks for it on its
   * own), and anything else is refused. Error pages render (an error dispatch is not refused a
   * second time), and no request here is saved as the one to return to after signing in to the
   * console: a refused {@code /favicon.ico} or {@code /error} once sent every sign-in to a blank
   * 403 page.
   */
  @Bean
  SecurityFilterChain relayServeSecurityFilterChain(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(
            a ->
                a.dispatcherTypeMatchers(DispatcherType.ERROR)
                    .permitAll()
                    .requestMatchers(
                        "/actuator/health",
                        "/actuator/health/**",
                        "/actuator/prometheus",
                        "/",
                        "/favicon.ico")
                    .permitAll()
                    .anyRequest()
                    .denyAll())
        .requestCache(r -> r.requestCache(new NullRequestCache()))
        .csrf(c -> c.ignoringRequestMatchers("/actuator/**"));
    return http.build();
  }

  /** Sends {@code /} to the console. */
  @Bean
  RootRedirect relayServeRootRedirect(ObjectProvider<ConsoleProperties> console) {
    return new RootRedirect(console.getIfAvailable(ConsoleProperties::new).getPath());
  }

  /** Holds the scheduler, if the config has schedules, so the context closes it. */
  static final class ScheduleRunner implements AutoCloseable {
    private final Scheduler scheduler;

    ScheduleRunner(Scheduler scheduler) {
      this.scheduler = scheduler;
    }

    @Override
    public void close() {
      if (scheduler != null) {
        scheduler.close();
      }
    }
  }

  /** The built-in {@code log} handler: logs the work and completes it. */
  static final class LogHandler implements Handler {
    static final LogHandler INSTANCE = new LogHandler();

    @Override
    public Outcome handle(Claim claim) {
      log.info(
          "work {} kind {} queue {} attempt {} generation {}: {}",
          claim.workId(),
          claim.kind(),
          claim.queue(),
          claim.attempt(),
          claim.generation(),
          claim.payload());
      return Outcome.done();
    }
  }
}
