package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;

/**
 * The console's sign-in under attack, through the application's real filter chain: failed sign-ins
 * limited per user name and per client address (429 with the sign-in page, even for the right
 * password), a success resetting no count, every failure and lock logged; and a session ended after
 * its idle timeout, which the page's own refresh does not extend. The limits' windows on a moving
 * clock are {@link SignInThrottleTest}'s and {@link SessionLimitsTest}'s.
 */
@RelayDatabaseTest
@ExtendWith(OutputCaptureExtension.class)
class ConsoleSignInTest {
  @Test
  void failedSignInsAreLimitedPerUserAndPerAddressAndSessionsExpire(
      TestDatabase db, CapturedOutput output) throws Exception {
    try (ConsoleApp app =
        ConsoleApp.start(
            db,
            "relay.console.sign-in.max-failures-per-user=3",
            "relay.console.sign-in.max-failures-per-address=5",
            "relay.console.sign-in.window=10m",
            "relay.console.session.idle-timeout=2s")) {
      MockMvc mvc = app.mvc();

      // An idle session ends; the page's live refresh (X-Relay-Live) does not keep it alive.
      MvcResult signedIn =
          signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.3.1");
      assertThat(signedIn.getResponse().getRedirectedUrl()).isEqualTo("/relay");
      MockHttpSession session = (MockHttpSession) signedIn.getRequest().getSession();
      await()
          .atMost(Duration.ofMinutes(1))
          .until(
              () ->
                  mvc.perform(get("/relay").session(session).header(SessionLimits.LIVE, "1"))
                      .andReturn()
                      .getResponse()
                      .getRedirectedUrl(),
              url -> "/relay/login?expired".equals(url));
      assertThat(session.isInvalid()).isTrue();
      assertThat(
              body(mvc.perform(get("/relay/login").param("expired", "")).andReturn().getResponse()))
          .contains("Your session expired");
      assertThat(output).contains("console session of 'olga' from 127.0.0.1 ended: idle for PT2S");

      // Per user: three failures from three addresses lock victor out everywhere, even with the
      // right password; olga is not affected.
      for (String address : new String[] {"10.0.0.1", "10.0.0.2", "10.0.0.3"}) {
        MvcResult wrong = signIn(mvc, ConsoleApp.VIEWER, "guess", address);
        assertThat(wrong.getResponse().getRedirectedUrl()).isEqualTo("/relay/login?error");
      }
      MockHttpServletResponse locked =
          signIn(mvc, ConsoleApp.VIEWER, ConsoleApp.VIEWER_PASSWORD, "10.0.0.4").getResponse();
      assertThat(locked.getStatus()).isEqualTo(429);
      assertThat(Long.parseLong(locked.getHeader("Retry-After"))).isBetween(1L, 600L);
      assertThat(locked.getHeader("Content-Security-Policy")).contains("frame-ancestors 'none'");
      assertThat(body(locked))
          .contains("Too many failed sign-ins for this user name or from this address")
          .contains("even with the right password")
          .contains("id=\"login\"");
      assertThat(
              signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.0.4")
                  .getResponse()
                  .getRedirectedUrl())
          .isEqualTo("/relay");
      assertThat(output)
          .contains("console sign-in failed: user 'victor' from 10.0.0.1")
          .contains("3 of 3 for the user")
          .contains("console sign-in limit reached: user 'victor' from 10.0.0.3")
          .contains("console sign-in refused: user 'victor' from 10.0.0.4");

      // Per address: five failures from one address under five names lock the address, for
      // olga's right password too; olga from another address signs in.
      for (int i = 0; i < 5; i++) {
        signIn(mvc, "name-" + i, "guess", "10.0.1.1");
      }
      assertThat(
              signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.1.1")
                  .getResponse()
                  .getStatus())
          .isEqualTo(429);
      assertThat(
              signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.1.2")
                  .getResponse()
                  .getRedirectedUrl())
          .isEqualTo("/relay");

      // A success resets no count: olga's own sign-in from 10.0.2.2 leaves the two failures from
      // 10.0.2.1 counted, and a third one locks olga.
      signIn(mvc, ConsoleApp.OPERATOR, "guess", "10.0.2.1");
      signIn(mvc, ConsoleApp.OPERATOR, "guess", "10.0.2.1");
      assertThat(
              signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.2.2")
                  .getResponse()
                  .getRedirectedUrl())
          .isEqualTo("/relay");
      signIn(mvc, ConsoleApp.OPERATOR, "guess", "10.0.2.1");
      assertThat(
              signIn(mvc, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD, "10.0.2.3")
                  .getResponse()
                  .getStatus())
          .isEqualTo(429);
      // The sign-in page itself still answers.
      assertThat(mvc.perform(get("/relay/login")).andReturn().getResponse().getStatus())
          .isEqualTo(200);
    }
  }

  private static MvcResult signIn(MockMvc mvc, String user, String password, String address)
      throws Exception {
    return mvc.perform(
            post("/relay/login")
                .param("username", user)
                .param("password", password)
                .with(csrf())
                .with(
                    request -> {
                      request.setRemoteAddr(address);
                      return request;
                    }))
        .andReturn();
  }

  private static String body(MockHttpServletResponse response) throws Exception {
    return response.getContentAsString();
  }
}
