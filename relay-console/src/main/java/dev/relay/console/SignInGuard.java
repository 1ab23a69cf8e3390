package dev.relay.console;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.web.authentication.AuthenticationFailureHandler;
import org.springframework.security.web.authentication.AuthenticationSuccessHandler;
import org.springframework.security.web.authentication.SimpleUrlAuthenticationFailureHandler;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The console's sign-in under attack: a filter in front of the form login that refuses an attempt
 * the {@link SignInThrottle} refuses (429, the sign-in page saying until when, {@code
 * Retry-After}), before the password is looked at; and the handlers that count a failure and log
 * each sign-in. The client address is the request's ({@link HttpServletRequest#getRemoteAddr()}):
 * the connection's, or the one a trusted proxy forwarded when the server is told to trust it (see
 * docs/console.md). Log lines go to {@code dev.relay.console.SignInGuard}: each failure and success
 * at INFO, a limit reached and each refused attempt at WARN; a user name is logged cut to 64
 * characters with anything unprintable escaped.
 */
final class SignInGuard extends OncePerRequestFilter {
  private static final Logger log = LoggerFactory.getLogger(SignInGuard.class);

  /** Session attribute: when the session signed in to the console (epoch ms). */
  static final String SIGNED_IN_AT = SignInGuard.class.getName() + ".signedInAt";

  /** Session attribute: the last request of the user's (epoch ms). */
  static final String LAST_SEEN = SignInGuard.class.getName() + ".lastSeen";

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);

  private final Console console;
  private final SignInThrottle throttle;
  private final String loginPath;
  private final SimpleUrlAuthenticationFailureHandler wrongPassword;

  SignInGuard(Console console, SignInThrottle throttle) {
    this.console = console;
    this.throttle = throttle;
    this.loginPath = console.mount + "/login";
    this.wrongPassword = new SimpleUrlAuthenticationFailureHandler(loginPath + "?error");
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    return !"POST".equals(request.getMethod())
        || !loginPath.equals(request.getRequestURI().substring(request.getContextPath().length()));
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String user = request.getParameter("username");
    String address = request.getRemoteAddr();
    SignInThrottle.Refusal refusal = throttle.refusal(user, address);
    if (refusal == null) {
      chain.doFilter(request, response);
      return;
    }
    Instant now = throttle.now();
    log.warn(
        "console sign-in refused: user '{}' from {}: too many failed sign-ins for {} until {}",
        shown(user),
        address,
        refusal.user() && refusal.address()
            ? "the user and the address"
            : refusal.user() ? "the user" : "the address",
        refusal.until());
    long seconds = refusal.seconds(now);
    ResponseEntity<String> page =
        console.page(
            request,
            "login",
            "Sign in",
            Map.of(
                "error", false,
                "signedOut", false,
                "expired", false,
                "locked",
                    "Too many failed sign-ins for this user name or from this address: sign-in"
                        + " is refused until "
                        + TIME.format(refusal.until())
                        + " (in "
                        + Format.INSTANCE.duration(Duration.ofSeconds(seconds))
                        + "), even with the right password."),
            HttpStatus.TOO_MANY_REQUESTS);
    response.setStatus(HttpStatus.TOO_MANY_REQUESTS.value());
    response.setHeader("Retry-After", Long.toString(seconds));
    page.getHeaders().forEach((name, values) -> values.forEach(v -> response.addHeader(name, v)));
    byte[] body = page.getBody().getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  /** Counts the failure, logs it, and sends the browser back to the sign-in page. */
  AuthenticationFailureHandler failureHandler() {
    return (request, response, exception) -> {
      failed(request, exception);
      wrongPassword.onAuthenticationFailure(request, response, exception);
    };
  }

  private void failed(HttpServletRequest request, AuthenticationException exception) {
    String user = request.getParameter("username");
    String address = request.getRemoteAddr();
    SignInThrottle.Failure f = throttle.failed(user, address);
    log.info(
        "console sign-in failed: user '{}' from {} ({}): {} of {} for the user, {} of {} for the"
            + " address in {}",
        shown(user),
        address,
        exception.getClass().getSimpleName(),
        f.user(),
        f.maxUser(),
        f.address(),
        f.maxAddress(),
        throttle.window());
    if (f.locks()) {
      log.warn(
          "console sign-in limit reached: user '{}' from {}: further sign-ins for {} are refused"
              + " until the oldest failure is {} old",
          shown(user),
          address,
          f.user() >= f.maxUser() ? "this user name" : "this address",
          throttle.window());
    }
  }

  /** Logs the sign-in, starts the session's clocks, then does what {@code next} does. */
  AuthenticationSuccessHandler successHandler(AuthenticationSuccessHandler next) {
    return (request, response, authentication) -> {
      signedIn(request, authentication);
      next.onAuthenticationSuccess(request, response, authentication);
    };
  }

  private void signedIn(HttpServletRequest request, Authentication authentication) {
    long now = throttle.now().toEpochMilli();
    HttpSession session = request.getSession();
    session.setAttribute(SIGNED_IN_AT, now);
    session.setAttribute(LAST_SEEN, now);
    log.info(
        "console sign-in: user '{}' from {}",
        shown(authentication.getName()),
        request.getRemoteAddr());
  }

  /** A user name as logged: at most 64 characters, anything unprintable escaped. */
  static String shown(String name) {
    if (name == null) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    int n = Math.min(name.length(), 64);
    for (int i = 0; i < n; i++) {
      char c = name.charAt(i);
      if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\' || Character.isSurrogate(c)) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return name.length() > n
        ? b.append("...(").append(name.length()).append(" chars)").toString()
        : b.toString();
  }
}
