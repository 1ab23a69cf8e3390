package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;

/** A console session's idle timeout and lifetime, on a clock the test moves: no waiting. */
class SessionLimitsTest {
  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2026-12-04T08:00:00Z"));
  private final InstantSource clock = now::get;
  private final MockHttpSession session = new MockHttpSession();
  private final SessionLimits limits;

  SessionLimitsTest() {
    ConsoleProperties.Session p = new ConsoleProperties.Session();
    p.setIdleTimeout(Duration.ofMinutes(30));
    p.setMaxLifetime(Duration.ofHours(12));
    limits = new SessionLimits("/relay", p, clock);
    session.setAttribute(SignInGuard.SIGNED_IN_AT, clock.millis());
    session.setAttribute(SignInGuard.LAST_SEEN, clock.millis());
  }

  @AfterEach
  void clear() {
    SecurityContextHolder.clearContext();
  }

  private void advance(Duration d) {
    now.updateAndGet(t -> t.plus(d));
  }

  /** A request of the signed-in user (or of the page's refresh); its response. */
  private MockHttpServletResponse request(boolean live) throws Exception {
    SecurityContextHolder.getContext()
        .setAuthentication(
            UsernamePasswordAuthenticationToken.authenticated(
                "olga", null, AuthorityUtils.createAuthorityList("ROLE_RELAY_OPERATOR")));
    MockHttpServletRequest request = new MockHttpServletRequest("GET", "/relay/work");
    request.setSession(session);
    if (live) {
      request.addHeader(SessionLimits.LIVE, "1");
    }
    MockHttpServletResponse response = new MockHttpServletResponse();
    limits.doFilter(request, response, new MockFilterChain());
    return response;
  }

  @Test
  void aSessionIdleForTheTimeoutIsEndedAndSentToSignIn() throws Exception {
    advance(Duration.ofMinutes(29));
    assertThat(request(false).getStatus()).isEqualTo(200);
    advance(Duration.ofMinutes(29)); // 29 minutes since the last request: still fine
    assertThat(request(false).getStatus()).isEqualTo(200);
    advance(Duration.ofMinutes(30));
    MockHttpServletResponse r = request(false);
    assertThat(r.getStatus()).isEqualTo(302);
    assertThat(r.getRedirectedUrl()).isEqualTo("/relay/login?expired");
    assertThat(session.isInvalid()).isTrue();
    assertThat(SecurityContextHolder.getContext().getAuthentication()).isNull();
  }

  @Test
  void thePagesOwnRefreshDoesNotKeepTheSessionAlive() throws Exception {
    for (int i = 0; i < 5; i++) {
      advance(Duration.ofMinutes(5));
      assertThat(request(true).getStatus()).isEqualTo(200);
    }
    advance(Duration.ofMinutes(5)); // 30 minutes of refreshes only
    assertThat(request(true).getRedirectedUrl()).isEqualTo("/relay/login?expired");
  }

  @Test
  void aBusySessionStillEndsAtItsLifetime() throws Exception {
    for (int i = 0; i < 12 * 4 - 1; i++) {
      advance(Duration.ofMinutes(15));
      assertThat(request(false).getStatus()).as("after %d minutes", (i + 1) * 15).isEqualTo(200);
    }
    advance(Duration.ofMinutes(15)); // 12 hours after signing in
    assertThat(request(false).getRedirectedUrl()).isEqualTo("/relay/login?expired");
  }

  @Test
  void anonymousRequestsAndSessionsSignedInElsewhereStartTheClocks() throws Exception {
    SecurityContextHolder.getContext()
        .setAuthentication(
            new AnonymousAuthenticationToken(
                "key", "anonymous", AuthorityUtils.createAuthorityList("ROLE_ANONYMOUS")));
    MockHttpSession fresh = new MockHttpSession();
    MockHttpServletRequest request = new MockHttpServletRequest("GET", "/relay/login");
    request.setSession(fresh);
    MockHttpServletResponse response = new MockHttpServletResponse();
    limits.doFilter(request, response, new MockFilterChain());
    assertThat(response.getStatus()).isEqualTo(200);
    assertThat(fresh.getAttribute(SignInGuard.SIGNED_IN_AT)).isNull();

    // Signed in by the application's own login: the console starts counting at its first request.
    session.clearAttributes();
    advance(Duration.ofHours(20));
    assertThat(request(false).getStatus()).isEqualTo(200);
    assertThat(session.getAttribute(SignInGuard.SIGNED_IN_AT)).isEqualTo(clock.millis());
  }
}
