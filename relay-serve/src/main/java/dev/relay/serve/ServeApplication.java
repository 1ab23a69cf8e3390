package dev.relay.serve;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.admin.Maintenance;
import dev.relay.console.ConsoleProperties;
import dev.relay.spring.autoconfigure.RelayConnections;
import dev.relay.spring.autoconfigure.RelayKindHandlers;
import dev.relay.spring.autoconfigure.RelayRuntime;
import dev.relay.spring.autoconfigure.RelaySchedules;
import jakarta.servlet.DispatcherType;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.LazyInitializationExcludeFilter;
import org.springframework.boot.SpringBootConfiguration;
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
 * The Spring Boot application of {@code relay serve}: Relay's starter (its connections, runtime,
 * maintenance loop, schedules, meters and {@code relay} health contributor, all from {@code
 * relay.*}) and the console behind form login, with handlers for the kinds of the {@link
 * ServeConfig} that {@link ServeCommand} checked and registered as a bean. The auto-configurations
 * are imported by name, not discovered: {@link ServeAutoConfigurations}.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@ServeAutoConfigurations
public class ServeApplication {
  private static final Logger log = LoggerFactory.getLogger("relay.serve");

  /** The configured kinds' handlers, for the starter's runtime. */
  @Bean
  RelayKindHandlers relayServeHandlers(ServeConfig config) {
    return config::handlers;
  }

  /**
   * What {@code spring.main.lazy-initialization} must still create at start-up: the runtime, the
   * maintenance loop and the schedules run without a request asking for them.
   */
  @Bean
  static LazyInitializationExcludeFilter relayServeStartsEagerly() {
    return LazyInitializationExcludeFilter.forBeanTypes(
        RelayConnections.class, RelayRuntime.class, Maintenance.class, RelaySchedules.class);
  }

  /**
   * {@code workers} in {@code /actuator/health}: up while this process's runtime runs (the
   * starter's {@code relay} contributor checks the database and the schema).
   */
  @Bean
  HealthIndicator workersHealthIndicator(RelayRuntime runtime, ServeConfig config) {
    return () ->
        runtime
            .relay()
            .map(
                relay ->
                    (relay.isRunning() ? Health.up() : Health.down())
                        .withDetail("workerId", relay.workerId()))
            .orElseGet(Health::down)
            .withDetail("kinds", config.kinds())
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
      ServeConfig config, ObjectProvider<ConsoleProperties> console) {
    ConsoleProperties p = console.getIfAvailable(ConsoleProperties::new);
    List<UserDetails> users =
        config.users().stream()
            .map(
                u ->
                    User.withUsername(u.getName().strip())
                        .password(u.getHash())
                        .roles(
                            u.getRole() == ServeProperties.Role.OPERATOR
                                ? p.getOperatorRole()
                                : p.getViewerRole())
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
