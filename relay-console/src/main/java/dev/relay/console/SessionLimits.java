package dev.relay.console;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Ends a signed-in console session after {@code relay.console.session.idle-timeout} without a
 * request of the user's, or {@code max-lifetime} after signing in: the session is invalidated (it
 * is the application's, so this signs the user out of the application too) and the request is sent
 * to the sign-in page, which says the session expired. A request the page's own live refresh makes
 * (header {@link #LIVE}) does not count as the user's: an unattended console expires. A session
 * signed in elsewhere in the application starts both clocks at its first console request.
 */
final class SessionLimits extends OncePerRequestFilter {
  private static final Logger log = LoggerFactory.getLogger(SessionLimits.class);

  /** The header {@code console.js} sends with its refresh requests. */
  static final String LIVE = "X-Relay-Live";

  private final String mount;
  private final Duration idle;
  private final Duration lifetime;
  private final InstantSource clock;

  SessionLimits(String mount, ConsoleProperties.Session p, InstantSource clock) {
    this.mount = mount;
    this.idle = p.getIdleTimeout();
    this.lifetime = p.getMaxLifetime();
    this.clock = clock;
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    HttpSession session = request.getSession(false);
    Authentication user = SecurityContextHolder.getContext().getAuthentication();
    if (session == null
        || user == null
        || !user.isAuthenticated()
        || user instanceof AnonymousAuthenticationToken) {
      chain.doFilter(request, response);
      return;
    }
    long now = clock.millis();
    long signedIn = millis(session, SignInGuard.SIGNED_IN_AT, now);
    long lastSeen = millis(session, SignInGuard.LAST_SEEN, now);
    String why =
        now - signedIn >= lifetime.toMillis()
            ? "signed in " + lifetime + " ago (relay.console.session.max-lifetime)"
            : now - lastSeen >= idle.toMillis()
                ? "idle for " + idle + " (relay.console.session.idle-timeout)"
                : null;
    if (why == null) {
      if (request.getHeader(LIVE) == null) {
        session.setAttribute(SignInGuard.LAST_SEEN, now);
      }
      chain.doFilter(request, response);
      return;
    }
    log.info(
        "console session of '{}' from {} ended: {}",
        SignInGuard.shown(user.getName()),
        request.getRemoteAddr(),
        why);
    session.invalidate();
    SecurityContextHolder.clearContext();
    response.sendRedirect(request.getContextPath() + mount + "/login?expired");
  }

  /** A session attribute holding epoch milliseconds, set to {@code now} when absent. */
  private static long millis(HttpSession session, String name, long now) {
    if (session.getAttribute(name) instanceof Long l) {
      return l;
    }
    session.setAttribute(name, now);
    return now;
  }
}
