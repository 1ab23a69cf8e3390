package dev.relay.console;

import static dev.relay.console.ConsoleTest.OPERATOR;
import static dev.relay.console.ConsoleTest.VIEWER;
import static dev.relay.console.ConsoleTest.body;
import static dev.relay.console.ConsoleTest.operatorPost;
import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.admin.Admin;
import dev.relay.admin.Pause;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;

/**
 * The pauses page over HTTP (MockMvc through the real filters): the viewer sees what is paused and
 * no forms, and cannot pause; CSRF is required; the operator pauses and resumes as himself with a
 * reason and an optional automatic resume; bad input changes nothing.
 */
@RelayDatabaseTest
class PausesConsoleTest {
  @Test
  void operatorPausesAndResumesAsHimselfViewerOnlyReads(TestDatabase db) throws Exception {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String empty =
          body(mvc.perform(get("/relay/pauses").with(VIEWER)).andExpect(status().isOk()));
      assertThat(empty).contains("Nothing is paused.").doesNotContain("id=\"pause\"");

      // The viewer may not pause; nobody may without the CSRF token.
      mvc.perform(
              post("/relay/pauses/pause")
                  .with(VIEWER)
                  .with(csrf())
                  .param("kind", "mail")
                  .param("reason", "viewer tries"))
          .andExpect(status().isForbidden());
      mvc.perform(
              post("/relay/pauses/pause")
                  .with(OPERATOR)
                  .param("kind", "mail")
                  .param("reason", "no token"))
          .andExpect(status().isForbidden());
      mvc.perform(
              post("/relay/pauses/pause")
                  .with(OPERATOR)
                  .with(csrf().useInvalidToken())
                  .param("kind", "mail")
                  .param("reason", "forged token"))
          .andExpect(status().isForbidden());
      assertThat(admin.pauses()).isEmpty();

      // Bad input: named, nothing changed.
      assertThat(
              body(
                  mvc.perform(operatorPost("/relay/pauses/pause", "reason", "no target"))
                      .andExpect(status().isBadRequest())))
          .contains("Queue and Kind are both empty: name a queue, a kind, or both");
      assertThat(
              body(
                  mvc.perform(
                          operatorPost(
                              "/relay/pauses/pause",
                              "kind",
                              "mail",
                              "reason",
                              "bad time",
                              "resumeAt",
                              "tomorrow"))
                      .andExpect(status().isBadRequest())))
          .contains("Resume by itself at (UTC, optional) &#39;tomorrow&#39; is not a time")
          .doesNotContain("resumeAt");
      mvc.perform(
              operatorPost(
                  "/relay/pauses/pause",
                  "kind",
                  "mail",
                  "reason",
                  "past",
                  "resumeAt",
                  "2020-01-01T00:00"))
          .andExpect(status().isBadRequest());
      mvc.perform(operatorPost("/relay/pauses/pause", "kind", "mail", "reason", " "))
          .andExpect(status().isBadRequest());
      assertThat(admin.pauses()).isEmpty();
      assertThat(admin.pauseHistory(10)).isEmpty();

      String until = Instant.now().plusSeconds(7200).toString().substring(0, 16); // datetime-local
      mvc.perform(
              operatorPost(
                  "/relay/pauses/pause",
                  "queue",
                  "",
                  "kind",
                  "mail",
                  "reason",
                  "SMTP relay down, INC-12",
                  "resumeAt",
                  until))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/pauses?done=paused"));
      assertThat(admin.pauses())
          .singleElement()
          .satisfies(
              p -> {
                assertThat(p.target()).isEqualTo("kind 'mail'");
                assertThat(p.actor()).isEqualTo(ConsoleApp.OPERATOR);
                assertThat(p.reason()).isEqualTo("SMTP relay down, INC-12");
                assertThat(p.resumeAt()).isEqualTo(Instant.parse(until + ":00Z"));
              });

      String viewer = body(mvc.perform(get("/relay/pauses").with(VIEWER)));
      assertThat(viewer)
          .contains("kind &#39;mail&#39;")
          .contains("SMTP relay down, INC-12")
          .doesNotContain("/relay/pauses/resume")
          .doesNotContain("id=\"pause\"");
      String operator = body(mvc.perform(get("/relay/pauses").with(OPERATOR)));
      assertThat(operator).contains("/relay/pauses/resume").contains("id=\"pause\"");

      mvc.perform(
              operatorPost(
                  "/relay/pauses/resume", "queue", "", "kind", "mail", "reason", "relay back"))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/pauses?done=resumed"));
      assertThat(admin.pauses()).isEmpty();
      mvc.perform(operatorPost("/relay/pauses/resume", "kind", "mail", "reason", "once more"))
          .andExpect(header().string("Location", "/relay/pauses?done=not-paused"));
      assertThat(admin.pauseHistory(10))
          .extracting(e -> e.action() + " " + e.actor() + ": " + e.reason())
          .containsExactly(
              "resume olga: once more",
              "resume olga: relay back",
              "pause olga: SMTP relay down, INC-12");
      String history = body(mvc.perform(get("/relay/pauses").with(VIEWER)));
      assertThat(history)
          .contains("resumed (nothing was paused)")
          .contains("relay back")
          .contains("Nothing is paused.");
    }
  }

  @Test
  void theOverviewMarksAPausedPairAndStoredMarkupStaysText(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    Pause p = admin.pause("default", null, "olga", "<script>alert(1)</script>", null);
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      assertThat(body(mvc.perform(get("/relay").with(VIEWER))))
          .contains("paused since " + p.pausedAt());
      assertThat(body(mvc.perform(get("/relay/pauses").with(VIEWER))))
          .contains("&lt;script&gt;alert(1)&lt;/script&gt;")
          .doesNotContain("<script>alert(1)");
    }
  }
}
