package dev.relay.console;

import dev.relay.admin.Admin;
import dev.relay.spring.autoconfigure.RelayAutoConfiguration;
import dev.relay.spring.autoconfigure.RelayConnections;
import dev.relay.spring.autoconfigure.RelayProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

/**
 * Mounts the Relay console under {@code relay.console.path} (default {@code /relay}) in a servlet
 * application that has Relay's auto-configuration.
 *
 * <p>Secure by default: the console is mounted only when the application has Spring Security
 * configured (a {@link SecurityFilterChain}, the application's own or Boot's default). It then adds
 * a filter chain of its own for its path only, ahead of the application's: sign-in with the
 * application's users, the viewer role to read and the operator role to act ({@code
 * relay.console.viewer-role}, {@code relay.console.operator-role}), CSRF on every POST, a
 * Content-Security-Policy without inline script and {@code frame-ancestors 'none'}. Without Spring
 * Security nothing is mounted and start-up logs why, unless {@code
 * relay.console.loopback-read-only=true} asks for a read-only console answering loopback clients.
 */
@AutoConfiguration(
    after = RelayAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
      "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
      "org.springframework.boot.security.autoconfigure.actuate.web.servlet.ManagementWebSecurityAutoConfiguration"
    })
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(Admin.class)
@ConditionalOnBean(RelayConnections.class)
@ConditionalOnBooleanProperty(name = "relay.console.enabled", matchIfMissing = true)
@EnableConfigurationProperties(ConsoleProperties.class)
public class ConsoleAutoConfiguration {
  private static final Logger log = LoggerFactory.getLogger(ConsoleAutoConfiguration.class);
  private static final String CHAIN = "org.springframework.security.web.SecurityFilterChain";

  static Admin admin(RelayConnections connections, RelayProperties relay) {
    return Admin.create(connections.dataSource(), relay.getSchema());
  }

  /** Behind the application's Spring Security. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({SecurityFilterChain.class, HttpSecurity.class})
  @ConditionalOnBean(SecurityFilterChain.class)
  @Import(ConsolePages.class)
  static class Secured {
    @Bean
    @Order(Ordered.HIGHEST_PRECEDENCE + 50)
    SecurityFilterChain relayConsoleSecurityFilterChain(
        HttpSecurity http, ConsoleProperties p, Console console) throws Exception {
      return ConsoleSecurity.chain(http, p, console);
    }

    @Bean
    Console relayConsole(RelayConnections connections, RelayProperties relay, ConsoleProperties p) {
      log.info(
          "Relay console mounted at {} behind Spring Security (viewer role {}, operator role {})",
          p.mount(),
          p.getViewerRole(),
          p.getOperatorRole());
      return new Console(
          admin(connections, relay), p, Console.Mode.SECURED, ConsoleSecurity::csrfField);
    }
  }

  /** No Spring Security, and a read-only console on loopback explicitly allowed. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingBean(type = CHAIN)
  @ConditionalOnBooleanProperty(name = "relay.console.loopback-read-only")
  @Import(ConsolePages.class)
  static class LoopbackReadOnly {
    @Bean
    Console relayConsole(RelayConnections connections, RelayProperties relay, ConsoleProperties p) {
      log.warn(
          "Relay console mounted at {} READ-ONLY for loopback clients only, without sign-in:"
              + " the application has no Spring Security and relay.console.loopback-read-only=true",
          p.mount());
      return new Console(admin(connections, relay), p, Console.Mode.LOOPBACK_READ_ONLY, null);
    }
  }

  /** No Spring Security and no explicit read-only console: not mounted, and says why. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingBean(type = CHAIN)
  @ConditionalOnBooleanProperty(
      name = "relay.console.loopback-read-only",
      havingValue = false,
      matchIfMissing = true)
  static class NotMounted {
    @Bean
    ConsoleNotMounted relayConsoleNotMounted(ConsoleProperties p) {
      log.warn(
          "Relay console NOT mounted at {}: the application has no Spring Security"
              + " (no SecurityFilterChain bean). Add spring-boot-starter-security and users with"
              + " the roles {} / {}, or set relay.console.loopback-read-only=true for a read-only"
              + " console on loopback, or relay.console.enabled=false to silence this line",
          p.getPath(),
          p.getViewerRole(),
          p.getOperatorRole());
      return new ConsoleNotMounted();
    }
  }

  /** Marks a context where the console was not mounted (see the start-up log for why). */
  public static final class ConsoleNotMounted {
    ConsoleNotMounted() {}
  }
}
