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

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

/**
 * Bulk actions over HTTP (MockMvc through the real filters): the viewer sees the preview's counts
 * and no confirmation, and cannot start one; CSRF is required; a bad filter, an unknown action or
 * an empty reason is refused by name with nothing stored or changed; markup in a reason is text; a
 * bulk action without a filter is neither offered, previewed nor started, nor one naming a kind or
 * queue that no work can have.
 */
@RelayDatabaseTest
class BulkConsoleTest {
  @Test
  void viewerPreviewsOnlyAndBadInputChangesNothing(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    ConsoleTest.failed(db, "order-2-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String list = body(mvc.perform(get("/relay/work?state=failed").with(VIEWER)));
      assertThat(list).doesNotContain("/relay/bulk/preview");
      assertThat(body(mvc.perform(get("/relay/work?state=failed").with(OPERATOR))))
          .contains("/relay/bulk/preview");

      String preview =
          body(
              mvc.perform(
                      get("/relay/bulk/preview?action=cancel&state=failed&kind=order_ack")
                          .with(VIEWER))
                  .andExpect(status().isOk()));
      assertThat(preview).contains("would be cancelled").doesNotContain("id=\"bulk-confirm\"");
      refusedToStart(mvc, "cancel", "state", "failed");

      assertThat(
              body(
                  mvc.perform(
                          operatorPost(
                              "/relay/bulk", "action", "cancel", "state", "broken", "reason", "x"))
                      .andExpect(status().isBadRequest())))
          .contains("State &#39;broken&#39; is not one of");
      assertThat(
              body(
                  mvc.perform(
                          operatorPost(
                              "/relay/bulk",
                              "action",
                              "cancel",
                              "olderThan",
                              "soon",
                              "reason",
                              "x"))
                      .andExpect(status().isBadRequest())))
          .contains("Created at least &#39;soon&#39; ago: not an age");
      assertThat(
              body(
                  mvc.perform(operatorPost("/relay/bulk", "action", "delete", "reason", "x"))
                      .andExpect(status().isBadRequest())))
          .contains("not a bulk action");
      mvc.perform(operatorPost("/relay/bulk", "action", "cancel", "state", "failed", "reason", " "))
          .andExpect(status().isBadRequest());
      mvc.perform(get("/relay/bulk/preview?action=redrive&blocked=nope").with(VIEWER))
          .andExpect(status().isBadRequest());
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
          .isEqualTo(2);

      mvc.perform(
              operatorPost(
                  "/relay/bulk",
                  "action",
                  "cancel",
                  "state",
                  "failed",
                  "olderThan",
                  "0s",
                  "reason",
                  "<b>drop</b> them"))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/bulk?id=1"));
      awaitDone(db, 1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'"))
          .isEqualTo(2);
      String page = body(mvc.perform(get("/relay/bulk?id=1").with(VIEWER)));
      assertThat(page)
          .contains("&lt;b&gt;drop&lt;/b&gt; them")
          .contains("state = failed, olderThan = 0 s")
          .doesNotContain("bulk-continue");
      assertThat(body(mvc.perform(get("/relay/bulk").with(VIEWER)))).contains("/relay/bulk?id=1");
    }
  }

  @Test
  void operatorPurgesByFilterViewerCannotAndRefusedWorkStays(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " claim_generation, attempts, outcome) VALUES"
            + " ('junk-1', 'junk', '{}', 'done', now() - interval '2 days', 1, 1, 'delivered')");
    ConsoleTest.failed(db, "junk-2", "junk", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      assertThat(
              body(
                  mvc.perform(get("/relay/bulk/preview?action=purge&kind=junk").with(VIEWER))
                      .andExpect(status().isOk())))
          .contains("would be purged (each leaves a tombstone)")
          .contains("refused: not done or cancelled")
          .contains("It cannot be undone")
          .doesNotContain("id=\"bulk-confirm\"");
      refusedToStart(mvc, "purge", "kind", "junk");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(2);

      mvc.perform(operatorPost("/relay/bulk", "action", "purge", "kind", "junk", "reason", "INC-5"))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/bulk?id=1"));
      awaitDone(db, 1);
      assertThat(db.queryString("SELECT string_agg(work_id, ',') FROM {schema}.work"))
          .isEqualTo("junk-2");
      assertThat(
              db.queryString(
                  "SELECT work_id || ' ' || actor || ' ' || reason || ' ' || from_state"
                      + " FROM {schema}.purge_item_audit"))
          .isEqualTo("junk-1 olga INC-5 done");
      assertThat(
              db.queryString(
                  "SELECT final_state || ' ' || last_generation || ' ' || outcome"
                      + " FROM {schema}.tombstone WHERE work_id = 'junk-1'"))
          .isEqualTo("done 1 delivered");
      assertThat(body(mvc.perform(get("/relay/bulk?id=1").with(VIEWER))))
          .contains("Purge by filter (bulk action 1)")
          .containsPattern("purged \\(each leaves a tombstone\\)</th><td>1<")
          .containsPattern("refused: not done or cancelled[^<]*</th><td>1<");
    }
  }

  @Test
  void withoutAFilterNoBulkActionIsOfferedPreviewedOrStarted(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      // The unfiltered list (blank filters are none) offers no bulk button, and says why.
      for (MockHttpServletRequestBuilder list :
          List.of(get("/relay/work"), get("/relay/work").param("state", "").param("kind", " "))) {
        assertThat(body(mvc.perform(list.with(OPERATOR)).andExpect(status().isOk())))
            .contains("order-1-ack")
            .doesNotContain("/relay/bulk/preview")
            .doesNotContain("all matching")
            .contains("filter the list to act on what it shows");
      }
      for (String action : new String[] {"redrive", "cancel", "purge"}) {
        // The preview's address typed without a filter: no counts, a link to the list.
        assertThat(
                body(
                    mvc.perform(get("/relay/bulk/preview?action=" + action).with(OPERATOR))
                        .andExpect(status().isBadRequest())))
            .contains("<h1>Cannot show this page</h1>")
            .contains(
                "A bulk action needs at least one filter (state, kind, queue, ordering key, error"
                    + " kind, outcome, held by a dependency, or age): without one it would act on"
                    + " every item in the schema.")
            .contains("<a href=\"/relay/work\">Open the work list</a>")
            .doesNotContain("Matching now");
        // A start without a filter, or with blank ones only: refused, nothing stored.
        for (MockHttpServletRequestBuilder start :
            List.of(
                operatorPost("/relay/bulk", "action", action, "reason", "x"),
                operatorPost("/relay/bulk", "action", action, "kind", " ", "reason", "x"))) {
          assertThat(body(mvc.perform(start).andExpect(status().isBadRequest())))
              .contains("<h1>Nothing changed</h1>")
              .contains("A bulk action needs at least one filter");
        }
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(ConsoleTest.state(db, "order-1-ack")).isEqualTo("failed");
    }
  }

  @Test
  void aKindOrQueueNoWorkCanHaveIsRefusedAndNothingIsStored(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String tooLong = "k".repeat(101);
      for (String[] filter :
          new String[][] {
            {"kind", "a b", "Kind"}, {"queue", "<b>q</b>", "Queue"}, {"kind", tooLong, "Kind"}
          }) {
        String problem =
            filter[2]
                + " &#39;"
                + (filter[1].length() > 100
                    ? filter[1].substring(0, 100) + "\u2026"
                    : filter[1].replace("<", "&lt;").replace(">", "&gt;"))
                + "&#39; is a name no work can have: a kind or queue name is 1-100 characters"
                + " from A-Z a-z 0-9 . _ - :";
        assertThat(
                body(
                    mvc.perform(
                            operatorPost(
                                "/relay/bulk",
                                "action",
                                "cancel",
                                filter[0],
                                filter[1],
                                "reason",
                                "x"))
                        .andExpect(status().isBadRequest())))
            .contains("<h1>Nothing changed</h1>")
            .contains(problem);
        assertThat(
                body(
                    mvc.perform(
                            get("/relay/bulk/preview")
                                .param("action", "purge")
                                .param(filter[0], filter[1])
                                .with(VIEWER))
                        .andExpect(status().isBadRequest())))
            .contains(problem);
        assertThat(
                body(
                    mvc.perform(get("/relay/work").param(filter[0], filter[1]).with(VIEWER))
                        .andExpect(status().isBadRequest())))
            .contains("<h1>Cannot show this page</h1>")
            .contains(problem);
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(ConsoleTest.state(db, "order-1-ack")).isEqualTo("failed");
      // A name work can have, with every character the rule allows, is a filter like any other.
      mvc.perform(get("/relay/work").param("kind", "a.B_9-x:y").with(VIEWER))
          .andExpect(status().isOk());
    }
  }

  /** A viewer's start (with a token) and an operator's without a token: both 403. */
  private static void refusedToStart(MockMvc mvc, String action, String filter, String value)
      throws Exception {
    mvc.perform(
            post("/relay/bulk")
                .with(VIEWER)
                .with(csrf())
                .param("action", action)
                .param(filter, value)
                .param("reason", "viewer tries"))
        .andExpect(status().isForbidden());
    mvc.perform(
            post("/relay/bulk")
                .with(OPERATOR)
                .param("action", action)
                .param(filter, value)
                .param("reason", "no token"))
        .andExpect(status().isForbidden());
  }

  /** Waits until bulk action {@code id}, run on the console's thread, is done. */
  private static void awaitDone(TestDatabase db, long id) {
    org.awaitility.Awaitility.await()
        .until(
            () ->
                "done"
                    .equals(
                        db.queryString(
                            "SELECT state FROM {schema}.bulk_operation WHERE id = " + id)));
  }
}
