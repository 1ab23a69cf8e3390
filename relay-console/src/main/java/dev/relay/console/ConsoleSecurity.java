package dev.relay.console;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configurers.HeadersConfigurer;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.csrf.CsrfToken;

/** The console's own filter chain; only loaded when Spring Security is on the class path. */
final class ConsoleSecurity {
  /** No inline script or style, nothing from elsewhere, never framed. */
  static final String CSP =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self';"
          + " base-uri 'none'; frame-ancestors 'none'";

  private ConsoleSecurity() {}

  static SecurityFilterChain chain(HttpSecurity http, ConsoleProperties p) throws Exception {
    String m = p.mount();
    String viewer = p.getViewerRole();
    String operator = p.getOperatorRole();
    http.securityMatcher(m, m + "/**")
        .authorizeHttpRequests(
            a ->
                a.requestMatchers(HttpMethod.GET, m + "/login", m + "/console.css")
                    .permitAll()
                    .requestMatchers(HttpMethod.GET, m, m + "/**")
                    .hasAnyRole(viewer, operator)
                    .anyRequest()
                    .hasRole(operator))
        .formLogin(
            f ->
                f.loginPage(m + "/login")
                    .loginProcessingUrl(m + "/login")
                    .defaultSuccessUrl(m)
                    .permitAll())
        .logout(l -> l.logoutUrl(m + "/logout").logoutSuccessUrl(m + "/login?logout").permitAll())
        .headers(
            h ->
                h.contentSecurityPolicy(c -> c.policyDirectives(CSP))
                    .frameOptions(HeadersConfigurer.FrameOptionsConfig::deny));
    return http.build();
  }

  /** The CSRF form field of the request, or null. */
  static String[] csrfField(HttpServletRequest request) {
    if (request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken t) {
      return new String[] {t.getParameterName(), t.getToken()};
    }
    return null;
  }
}
