package dev.relay.docs;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;

/** The code of docs/console.md. */
final class ConsoleSnippets {
  private ConsoleSnippets() {}

  /** The application's users, with password hashes from its configuration. */
  @Configuration
  static class ConsoleUsers {
    private final String minaBcryptHash = "{bcrypt}$2a$10$...";
    private final String tomBcryptHash = "{bcrypt}$2a$10$...";

    // docs:begin console-users
    @Bean
    UserDetailsService users() {
      return new InMemoryUserDetailsManager(
          User.withUsername("mina").password(minaBcryptHash).roles("RELAY_OPERATOR").build(),
          User.withUsername("tom").password(tomBcryptHash).roles("RELAY_VIEWER").build());
    }
    // docs:end
  }
}
