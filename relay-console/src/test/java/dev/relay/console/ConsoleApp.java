package dev.relay.console;

import dev.relay.test.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;

/**
 * A whole Spring Boot web application with the starter and the console on the test's database:
 * Boot's default security for the application's own pages, three users (olga the operator, victor
 * the viewer, ursula with neither role), Tomcat on a free loopback port.
 */
final class ConsoleApp implements AutoCloseable {
  static final String OPERATOR = "olga";
  static final String OPERATOR_PASSWORD = "olga-secret";
  static final String VIEWER = "victor";
  static final String VIEWER_PASSWORD = "victor-secret";

  /** A user of the application with neither of the console's roles. */
  static final String OUTSIDER = "ursula";

  static final String OUTSIDER_PASSWORD = "ursula-secret";

  /** The application: users and one page of its own; everything else is auto-configured. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    UserDetailsService users() {
      return new InMemoryUserDetailsManager(
          User.withUsername(OPERATOR)
              .password("{noop}" + OPERATOR_PASSWORD)
              .roles("RELAY_OPERATOR")
              .build(),
          User.withUsername(VIEWER)
              .password("{noop}" + VIEWER_PASSWORD)
              .roles("RELAY_VIEWER")
              .build(),
          User.withUsername(OUTSIDER)
              .password("{noop}" + OUTSIDER_PASSWORD)
              .roles("SHOP_CLERK")
              .build());
    }

    @Bean
    Hello hello() {
      return new Hello();
    }
  }

  /**
   * A page of the application's own, which the console must leave to the application's security.
   */
  @RestController
  static class Hello {
    @GetMapping("/hello")
    String hello() {
      return "hello";
    }
  }

  private final ConfigurableApplicationContext context;

  private ConsoleApp(ConfigurableApplicationContext context) {
    this.context = context;
  }

  /** The application's own security: HTTP Basic for everything, no order, no matcher. */
  static class OwnSecurity {
    @Bean
    SecurityFilterChain applicationChain(HttpSecurity http) throws Exception {
      return http.authorizeHttpRequests(a -> a.anyRequest().authenticated())
          .httpBasic(Customizer.withDefaults())
          .build();
    }
  }

  static ConsoleApp start(TestDatabase db, String... properties) {
    return start(db, new Class<?>[] {App.class}, properties);
  }

  static ConsoleApp start(TestDatabase db, Class<?>[] sources, String... properties) {
    List<String> all = new ArrayList<>();
    all.add("spring.datasource.url=" + db.jdbcUrl());
    all.add("relay.schema=" + db.schema());
    all.add("relay.poll-interval=500ms");
    all.add("relay.shutdown-grace=1s");
    all.add("server.port=0");
    all.add("server.address=127.0.0.1");
    all.add("spring.main.banner-mode=off");
    all.addAll(List.of(properties));
    return new ConsoleApp(
        new SpringApplicationBuilder(sources).properties(all.toArray(String[]::new)).run());
  }

  ConfigurableApplicationContext context() {
    return context;
  }

  int port() {
    return ((WebServerApplicationContext) context).getWebServer().getPort();
  }

  /** MockMvc on the running application, through its security filters. */
  MockMvc mvc() {
    return MockMvcBuilders.webAppContextSetup((WebApplicationContext) context)
        .apply(
            org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers
                .springSecurity())
        .build();
  }

  @Override
  public void close() {
    context.close();
  }
}
