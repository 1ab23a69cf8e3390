package dev.relay.examples.springshop;

import jakarta.servlet.DispatcherType;
import java.util.ArrayList;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The shop's own security. Its JSON API ({@code POST /purchases}, and {@code POST /mailer/acks},
 * which Relay's worker calls) is open, as in the rest of this example, and exempt from CSRF (no
 * browser session posts to it); everything else needs a signed-in user, except the error dispatch,
 * so that an error in the open API reaches its client as itself and not as a 401. The Relay console
 * under {@code /relay} adds its own filter chain for that path ahead of this one and signs users in
 * with its form.
 *
 * <p>Users come from properties with bcrypt hashes, never passwords: {@code shop.operator.name} and
 * {@code shop.operator.hash} (role {@code RELAY_OPERATOR}: reads and acts in the console), {@code
 * shop.viewer.name} and {@code shop.viewer.hash} (role {@code RELAY_VIEWER}: reads). Without them
 * nobody can sign in.
 */
@Configuration(proxyBeanMethods = false)
class ShopSecurity {
  @Bean
  SecurityFilterChain shopFilterChain(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(
            a ->
                a.requestMatchers("/purchases", "/mailer/acks")
                    .permitAll()
                    // The container's error dispatch (a 400, 405 or 415 Spring answers itself)
                    // renders Boot's error body; guarded, it became a bare 401.
                    .dispatcherTypeMatchers(DispatcherType.ERROR)
                    .permitAll()
                    .anyRequest()
                    .authenticated())
        .csrf(c -> c.ignoringRequestMatchers("/purchases", "/mailer/acks"))
        .httpBasic(Customizer.withDefaults());
    return http.build();
  }

  @Bean
  PasswordEncoder passwordEncoder() {
    return new BCryptPasswordEncoder();
  }

  @Bean
  UserDetailsService shopUsers(Environment env) {
    List<UserDetails> users = new ArrayList<>();
    add(users, env, "operator", "RELAY_OPERATOR");
    add(users, env, "viewer", "RELAY_VIEWER");
    return new InMemoryUserDetailsManager(users);
  }

  private static void add(List<UserDetails> users, Environment env, String who, String role) {
    String name = env.getProperty("shop." + who + ".name");
    String hash = env.getProperty("shop." + who + ".hash");
    if (name != null && !name.isBlank() && hash != null && !hash.isBlank()) {
      users.add(User.withUsername(name).password(hash).roles(role).build());
    }
  }
}
