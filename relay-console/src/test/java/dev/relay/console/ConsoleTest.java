package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.redirectedUrl;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.admin.Admin;
import dev.relay.admin.WorkDetail;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.ResultActions;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/** The console inside a Spring Boot application, over HTTP (MockMvc through the real filters). */
@RelayDatabaseTest
class ConsoleTest {
  static final RequestPostProcessor OPERATOR = user(ConsoleApp.OPERATOR).roles("RELAY_OPERATOR");
  static final RequestPostProcessor VIEWER = user(ConsoleApp.VIEWER).roles("RELAY_VIEWER");

  static void failed(TestDatabase db, String workId, String payload) throws Exception {
    failed(db, workId, "order_ack", payload);
  }

  static void failed(TestDatabase db, String workId, String kind, String payload) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, max_attempts, claim_generation, last_error_kind,"
            + " last_error, outcome) VALUES ('"
            + workId
            + "', '"
            + kind
            + "', '"
            + payload
            + "', 'failed', now(), now(), 3, 3, 3, 'http_500', 'provider said 500',"
            + " 'not_delivered')");
  }

  /** A POST by the operator with a valid CSRF token and the given name, value pairs. */
  static MockHttpServletRequestBuilder operatorPost(String path, String... params) {
    MockHttpServletRequestBuilder b = post(path).with(OPERATOR).with(csrf());
    for (int i = 0; i < params.length; i += 2) {
      b = b.param(params[i], params[i + 1]);
    }
    return b;
  }

  /** The response's body. */
  static String body(ResultActions result) throws Exception {
    return result.andReturn().getResponse().getContentAsString();
  }

  static String state(TestDatabase db, String workId) throws Exception {
    return db.queryString("SELECT state FROM {schema}.work WHERE work_id = '" + workId + "'");
  }

  @Test
  void anonymousIsSentToSignInAndTheApplicationKeepsItsOwnSecurity(TestDatabase db)
      throws Exception {
    failed(db, "order-1-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      mvc.perform(get("/relay"))
          .andExpect(status().isFound())
          .andExpect(redirectedUrl("/relay/login"));
      mvc.perform(get("/relay/item").param("id", "order-1-ack")).andExpect(status().isFound());
      mvc.perform(
              post("/relay/item/redrive")
                  .with(csrf())
                  .param("id", "order-1-ack")
                  .param("reason", "x"))
          .andExpect(status().isFound());
      assertThat(state(db, "order-1-ack")).isEqualTo("failed");
      // The console's chain did not replace Boot's default one for the rest of the application.
      int hello = mvc.perform(get("/hello")).andReturn().getResponse().getStatus();
      assertThat(hello).isIn(302, 401);
      mvc.perform(get("/hello").with(VIEWER)).andExpect(status().isOk());
      // The sign-in page itself is public, and carries the CSRF field.
      String login = body(mvc.perform(get("/relay/login")).andExpect(status().isOk()));
      assertThat(login).contains("name=\"_csrf\"").contains("action=\"/relay/login\"");
    }
  }

  @Test
  void cspWithoutInlineScriptAndNoFramingOnEveryPage(TestDatabase db) throws Exception {
    failed(db, "order-2-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      for (String page :
          List.of(
              "/relay",
              "/relay/work",
              "/relay/item?id=order-2-ack",
              "/relay/failures",
              "/relay/kinds",
              "/relay/charts",
              "/relay/login")) {
        String csp =
            mvc.perform(get(page).with(VIEWER))
                .andExpect(status().isOk())
                .andExpect(header().string("X-Frame-Options", "DENY"))
                .andReturn()
                .getResponse()
                .getHeader("Content-Security-Policy");
        assertThat(csp)
            .as(page)
            .contains("frame-ancestors 'none'")
            .contains("script-src 'self'")
            .doesNotContain("unsafe-inline");
      }
    }
  }

  @Test
  void viewerReadsButCannotActOperatorRedrivesAsHimselfAndCsrfIsRequired(TestDatabase db)
      throws Exception {
    failed(db, "order-3-ack", "{\"order\": 3}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String viewerPage =
          body(
              mvc.perform(get("/relay/item").param("id", "order-3-ack").with(VIEWER))
                  .andExpect(status().isOk()));
      assertThat(viewerPage).contains("order-3-ack").doesNotContain("id=\"redrive\"");

      mvc.perform(
              post("/relay/item/redrive")
                  .with(VIEWER)
                  .with(csrf())
                  .param("id", "order-3-ack")
                  .param("reason", "viewer tries"))
          .andExpect(status().isForbidden());
      mvc.perform(
              post("/relay/item/cancel")
                  .with(VIEWER)
                  .with(csrf())
                  .param("id", "order-3-ack")
                  .param("reason", "viewer tries"))
          .andExpect(status().isForbidden());
      mvc.perform(post("/relay/purge").with(VIEWER).with(csrf()).param("reason", "viewer tries"))
          .andExpect(status().isForbidden());
      assertThat(state(db, "order-3-ack")).isEqualTo("failed");

      // An operator without the CSRF token, and with a forged one, is refused too.
      mvc.perform(
              post("/relay/item/redrive")
                  .with(OPERATOR)
                  .param("id", "order-3-ack")
                  .param("reason", "no token"))
          .andExpect(status().isForbidden());
      mvc.perform(
              post("/relay/item/redrive")
                  .with(OPERATOR)
                  .with(csrf().useInvalidToken())
                  .param("id", "order-3-ack")
                  .param("reason", "forged token"))
          .andExpect(status().isForbidden());
      assertThat(state(db, "order-3-ack")).isEqualTo("failed");

      // Without a reason: a clear refusal, nothing changed.
      String noReason =
          body(
              mvc.perform(operatorPost("/relay/item/redrive", "id", "order-3-ack", "reason", " "))
                  .andExpect(status().isBadRequest()));
      assertThat(noReason).contains("Reason is empty").doesNotContain("invalid admin request");
      assertThat(state(db, "order-3-ack")).isEqualTo("failed");

      String operatorPage =
          body(mvc.perform(get("/relay/item").param("id", "order-3-ack").with(OPERATOR)));
      assertThat(operatorPage).contains("id=\"redrive\"").contains("name=\"_csrf\"");

      mvc.perform(
              operatorPost(
                  "/relay/item/redrive", "id", "order-3-ack", "reason", "provider back, INC-7"))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/item?id=order-3-ack&done=redriven"));
      assertThat(state(db, "order-3-ack")).isEqualTo("ready");
      WorkDetail d = Admin.create(db.dataSource(), db.schema()).show("order-3-ack").orElseThrow();
      assertThat(d.redrives()).hasSize(1);
      assertThat(d.redrives().get(0).actor()).isEqualTo(ConsoleApp.OPERATOR);
      assertThat(d.redrives().get(0).reason()).isEqualTo("provider back, INC-7");

      String after =
          body(
              mvc.perform(
                  get("/relay/item")
                      .param("id", "order-3-ack")
                      .param("done", "redriven")
                      .with(VIEWER)));
      assertThat(after).contains("provider back, INC-7").contains(">olga<");
    }
  }

  @Test
  void storedMarkupIsShownAsTextNeverAsHtml(TestDatabase db) throws Exception {
    failed(
        db,
        "order-4-ack",
        "<b>kind</b>",
        "{\"note\": \"<script>alert(1)</script>\", \"q\": \"\\\"''&\"}");
    db.execute(
        "UPDATE {schema}.outbox SET last_error = '<img src=x onerror=alert(2)>'"
            + " WHERE work_id = 'order-4-ack'");
    registerKind(db, "<b>kind</b>");
    db.execute(
        "INSERT INTO {schema}.limiter (kind, max_running) VALUES ('<b>kind</b>', 2);"
            + "INSERT INTO {schema}.schedule_state (name, kind, definition)"
            + " VALUES ('nightly', '<b>kind</b>', 'every PT1M missed=skip')");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      for (String page :
          List.of(
              "/relay",
              "/relay/work?state=failed",
              "/relay/item?id=order-4-ack",
              "/relay/failures",
              "/relay/kinds",
              "/relay/limits",
              "/relay/schedules",
              "/relay/search?json=%7B%7D&window=24h")) {
        String html =
            body(
                mvc.perform(get(java.net.URI.create(page)).with(OPERATOR))
                    .andExpect(status().isOk()));
        // The console's own script, in the head of every page, is the only script element.
        assertThat(html).as(page).containsOnlyOnce("<script");
        assertThat(html.replace("<script src=\"/relay/console.js\" defer></script>", ""))
            .as(page)
            .doesNotContain("<script")
            .doesNotContain("<img")
            .doesNotContain("<b>");
        assertThat(html).as(page).contains("&lt;b&gt;kind&lt;/b&gt;");
      }
      String item = body(mvc.perform(get("/relay/item?id=order-4-ack").with(OPERATOR)));
      assertThat(item)
          .contains("&lt;script&gt;alert(1)&lt;/script&gt;")
          .contains("&lt;img src=x onerror=alert(2)&gt;")
          // pretty-printed: one field per line
          .containsPattern("\\{\\n\\s+&quot;\\w+&quot; : ");
    }
  }

  static void registerKind(TestDatabase db, String kind) throws Exception {
    db.execute(
        "INSERT INTO {schema}.kind (kind, backoff_base, backoff_cap, max_attempts, max_elapsed,"
            + " handler_timeout, dedup_horizon, unknown_outcome, registered_by) VALUES ('"
            + kind
            + "', '2 seconds', '10 minutes', 8, '12 hours', '30 minutes', '24 hours', 'park',"
            + " 'worker-7')");
  }

  @Test
  void overviewChartsTheLastHourAndTheFailuresAndKindsPagesLinkToTheList(TestDatabase db)
      throws Exception {
    failed(db, "order-20-ack", "{}");
    failed(db, "order-21-ack", "{}");
    failed(db, "order-22-ack", "mail", "{}");
    db.execute(
        "UPDATE {schema}.outbox SET last_error_kind = 'deadline' WHERE work_id = 'order-22-ack';"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, claim_generation, outcome) VALUES ('order-23-ack',"
            + " 'order_ack', '{}', 'done', now(), now(), 1, 1, 'delivered')");
    registerKind(db, "order_ack");
    db.execute(
        "INSERT INTO {schema}.limiter (kind, max_running, rate_limit, rate_interval)"
            + " VALUES ('order_ack', 4, 10, interval '1 minute')");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String overview = body(mvc.perform(get("/relay").with(VIEWER)).andExpect(status().isOk()));
      assertThat(overview)
          .contains("<svg")
          .containsPattern("<rect class=\"done\" x=\"\\d+\" y=\"\\d+\"")
          .containsPattern("<rect class=\"failed\" x=\"\\d+\" y=\"\\d+\"")
          .contains("<span class=\"key-done\">done</span> 1")
          .contains("<span class=\"key-failed\">failed</span> 3")
          .doesNotContain("style=");

      String failures =
          body(mvc.perform(get("/relay/failures").with(VIEWER)).andExpect(status().isOk()));
      String link = "/relay/work?state=failed&amp;queue=default&amp;kind=order_ack&amp;errorKind=";
      assertThat(failures)
          .contains("href=\"" + link + "http_500\">2</a>")
          .contains(
              "href=\"/relay/work?state=failed&amp;queue=default&amp;kind=mail&amp;"
                  + "errorKind=deadline\">1</a>");
      String listed =
          body(
              mvc.perform(
                      get("/relay/work?state=failed&queue=default&kind=order_ack&errorKind=http_500")
                          .with(VIEWER))
                  .andExpect(status().isOk()));
      assertThat(listed)
          .contains("order-20-ack")
          .contains("order-21-ack")
          .doesNotContain("order-22-ack");

      String kinds = body(mvc.perform(get("/relay/kinds").with(VIEWER)).andExpect(status().isOk()));
      assertThat(kinds)
          .contains("order_ack")
          .contains("<td>8</td>")
          .contains("2 s, 10 min 0 s")
          .contains("12 h 0 min")
          .contains("1 d 0 h")
          .contains("park as failed, outcome unknown")
          .contains("at most 4 running; 10 claims per 1 min 0 s")
          .contains("worker-7");
    }
  }

  @Test
  void overviewCountsWorkHeldByADependencyAndTheListShowsItByReason(TestDatabase db)
      throws Exception {
    try (java.sql.Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      dev.relay.Outbox outbox = dev.relay.Outbox.builder().schema(db.schema()).build();
      outbox.enqueueAll(
          c,
          List.of(
              dev.relay.Work.of("order-30-pay", "manual", "{}"),
              dev.relay.Work.of("order-31-pay", "manual", "{}")));
      outbox.enqueue(c, dev.relay.Work.of("order-30-ship", "ship", "{}").dependsOn("order-30-pay"));
      outbox.enqueue(c, dev.relay.Work.of("order-31-ship", "ship", "{}").dependsOn("order-31-pay"));
      c.commit();
    }
    Admin.create(db.dataSource(), db.schema()).cancel("order-30-pay", "mina@ops", "withdrawn");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String overview = body(mvc.perform(get("/relay").with(VIEWER)).andExpect(status().isOk()));
      assertThat(overview)
          .contains("Held by a dependency")
          .contains(
              "href=\"/relay/work?queue=default&amp;kind=ship&amp;blocked=dependency_cancelled\">"
                  + "dependency_cancelled: 1</a>");
      String held =
          body(
              mvc.perform(get("/relay/work?kind=ship&blocked=dependency_cancelled").with(VIEWER))
                  .andExpect(status().isOk()));
      // order-31-ship only waits (its dependency is ready): it is not held
      assertThat(held).contains("order-30-ship").doesNotContain("order-31-ship");
      assertThat(
              body(
                  mvc.perform(get("/relay/work?blocked=any").with(VIEWER))
                      .andExpect(status().isOk())))
          .contains("order-30-ship")
          .doesNotContain("order-31-ship");
      assertThat(
              body(
                  mvc.perform(get("/relay/work?blocked=dependency_lost").with(VIEWER))
                      .andExpect(status().isBadRequest())))
          .contains("Held by a dependency &#39;dependency_lost&#39; is neither any nor one of");
    }
  }

  @Test
  void aLargePayloadIsShownCutWithADownloadThatIsAnAttachmentForViewersToo(TestDatabase db)
      throws Exception {
    String blob = "x".repeat(ItemController.MAX_SHOWN_PAYLOAD + 5_000);
    failed(db, "big-1", "{\"blob\": \"" + blob + "\", \"tail\": \"<script>alert(1)</script>\"}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String item =
          body(mvc.perform(get("/relay/item?id=big-1").with(VIEWER)).andExpect(status().isOk()));
      assertThat(item)
          .contains("Shown cut to the first " + ItemController.MAX_SHOWN_PAYLOAD + " of ")
          .contains("href=\"/relay/item/download?id=big-1&amp;part=payload\"")
          .doesNotContain(blob)
          .doesNotContain("alert(1)");

      var response =
          mvc.perform(get("/relay/item/download?id=big-1&part=payload").with(VIEWER))
              .andExpect(status().isOk())
              .andExpect(header().string("X-Content-Type-Options", "nosniff"))
              .andReturn()
              .getResponse();
      assertThat(response.getHeaders("X-Content-Type-Options")).containsExactly("nosniff");
      assertThat(response.getContentType()).startsWith("application/json");
      assertThat(response.getHeader("Content-Disposition"))
          .startsWith("attachment")
          .contains("filename=\"big-1.payload.json\"");
      assertThat(response.getContentAsString())
          .isEqualTo(
              db.queryString("SELECT payload::text FROM {schema}.work WHERE work_id = 'big-1'"))
          .contains(blob)
          .contains("<script>alert(1)</script>");

      mvc.perform(get("/relay/item/download?id=big-1&part=result").with(VIEWER))
          .andExpect(status().isNotFound());
      mvc.perform(get("/relay/item/download?id=big-1&part=secrets").with(VIEWER))
          .andExpect(status().isBadRequest());
      mvc.perform(get("/relay/item/download?id=big-1")).andExpect(status().isFound());
    }
  }

  @Test
  void aDownloadsFileNameKeepsOnlySafeCharacters() {
    assertThat(ItemController.fileName("order-103/ack\"; x=..\\y"))
        .isEqualTo("order-103_ack___x_.._y");
    assertThat(ItemController.fileName(".hidden")).isEqualTo("_hidden");
  }

  @Test
  void overviewShowsWhenDoneAndCancelledWereCounted(TestDatabase db) throws Exception {
    failed(db, "order-9-ack", "{}");
    // The starter's maintenance loop would count at once; this test counts by hand, when it says.
    try (ConsoleApp app = ConsoleApp.start(db, "relay.maintenance.enabled=false")) {
      MockMvc mvc = app.mvc();
      assertThat(body(mvc.perform(get("/relay").with(VIEWER)).andExpect(status().isOk())))
          .contains("not counted yet");
      java.time.Instant asOf = Admin.create(db.dataSource(), db.schema()).refreshSummary();
      assertThat(body(mvc.perform(get("/relay").with(VIEWER)).andExpect(status().isOk())))
          .contains("as of " + asOf);
    }
  }

  @Test
  void workListPagesByKeysetAndNeverRepeatsOrSkips(TestDatabase db) throws Exception {
    for (int i = 1; i <= 7; i++) {
      failed(db, "order-" + (100 + i) + "-ack", "{}");
    }
    try (ConsoleApp app = ConsoleApp.start(db, "relay.console.page-size=3")) {
      MockMvc mvc = app.mvc();
      List<String> seen = new ArrayList<>();
      String url = "/relay/work?state=failed";
      int pages = 0;
      while (url != null) {
        String html = body(mvc.perform(get(url).with(VIEWER)).andExpect(status().isOk()));
        pages++;
        Matcher m = Pattern.compile("item\\?id=(order-\\d+-ack)").matcher(html);
        while (m.find()) {
          seen.add(m.group(1));
        }
        Matcher next = Pattern.compile("<a rel=\"next\" href=\"([^\"]+)\"").matcher(html);
        url = next.find() ? next.group(1).replace("&amp;", "&") : null;
        if (url != null) {
          assertThat(url).contains("after=").doesNotContain("offset").doesNotContain("page=");
        }
        if (pages == 1) {
          // Work added meanwhile, created after the cursor, shows on a later page.
          failed(db, "order-200-ack", "{}");
        }
      }
      assertThat(pages).isEqualTo(3);
      assertThat(seen).hasSize(8).doesNotHaveDuplicates();
      assertThat(seen.get(7)).isEqualTo("order-200-ack");
    }
  }

  @Test
  void withoutSpringSecurityNothingIsMountedUnlessReadOnlyOnLoopbackIsAllowed(TestDatabase db)
      throws Exception {
    failed(db, "order-5-ack", "{}");
    String noSecurity =
        "spring.autoconfigure.exclude="
            + "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration,"
            + "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration,"
            + "org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration,"
            + "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration";
    try (ConsoleApp app = ConsoleApp.start(db, noSecurity)) {
      assertThat(app.context().getBeansOfType(ConsoleAutoConfiguration.ConsoleNotMounted.class))
          .hasSize(1);
      assertThat(app.context().getBeansOfType(Console.class)).isEmpty();
      org.springframework.test.web.servlet.setup.MockMvcBuilders.webAppContextSetup(
              (org.springframework.web.context.WebApplicationContext) app.context())
          .build()
          .perform(get("/relay"))
          .andExpect(status().isNotFound());
    }
    try (ConsoleApp app =
        ConsoleApp.start(db, noSecurity, "relay.console.loopback-read-only=true")) {
      MockMvc mvc =
          org.springframework.test.web.servlet.setup.MockMvcBuilders.webAppContextSetup(
                  (org.springframework.web.context.WebApplicationContext) app.context())
              .build();
      String html =
          body(
              mvc.perform(
                      get("/relay/item?id=order-5-ack")
                          .with(
                              r -> {
                                r.setRemoteAddr("127.0.0.1");
                                return r;
                              }))
                  .andExpect(status().isOk()));
      assertThat(html).contains("order-5-ack").doesNotContain("<form method=\"post\"");
      mvc.perform(
              get("/relay")
                  .with(
                      r -> {
                        r.setRemoteAddr("192.0.2.7");
                        return r;
                      }))
          .andExpect(status().isForbidden());
      mvc.perform(
              post("/relay/item/redrive")
                  .param("id", "order-5-ack")
                  .param("reason", "x")
                  .with(
                      r -> {
                        r.setRemoteAddr("127.0.0.1");
                        return r;
                      }))
          .andExpect(status().isForbidden());
      // A wrong method or an address with no page: the console's page for a loopback client ...
      assertThat(
              body(
                  mvc.perform(get("/relay/item/redrive").with(from("127.0.0.1")))
                      .andExpect(status().isMethodNotAllowed())
                      .andExpect(header().string("Allow", "POST"))))
          .contains("GET /relay/item/redrive is not a page")
          .contains("which only an operator can send");
      assertThat(
              body(
                  mvc.perform(get("/relay/nope").with(from("127.0.0.1")))
                      .andExpect(status().isNotFound())))
          .contains("There is no page at /relay/nope.");
      // ... and Spring's answer, as before, for anyone else
      assertThat(
              body(
                  mvc.perform(get("/relay/nope").with(from("192.0.2.7")))
                      .andExpect(status().isNotFound())))
          .doesNotContain("Relay");
      assertThat(state(db, "order-5-ack")).isEqualTo("failed");
    }
  }

  /** A request from {@code address}. */
  private static RequestPostProcessor from(String address) {
    return r -> {
      r.setRemoteAddr(address);
      return r;
    };
  }

  @Test
  void redrivePastTheDedupHorizonIsRefusedUntilConfirmedWithAReason(TestDatabase db)
      throws Exception {
    failed(db, "order-6-ack", "{}");
    db.execute(
        "UPDATE {schema}.outbox SET first_attempt_at = now() - interval '30 days'"
            + " WHERE work_id = 'order-6-ack'");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      // The item page shows the horizon check before the operator acts.
      String item = body(mvc.perform(get("/relay/item").param("id", "order-6-ack").with(OPERATOR)));
      assertThat(item)
          .contains("It has passed")
          .contains("would be refused: the receiver&#39;s deduplication horizon has passed");
      String refused =
          body(
              mvc.perform(
                      operatorPost(
                          "/relay/item/redrive", "id", "order-6-ack", "reason", "retry please"))
                  .andExpect(status().isConflict()));
      assertThat(refused)
          .contains("Redrive refused")
          .contains("deduplication horizon has passed")
          .contains("the deduplication horizon ended")
          .contains("name=\"overrideHorizon\" value=\"true\"")
          .contains("name=\"confirm\"");
      assertThat(state(db, "order-6-ack")).isEqualTo("failed");

      // The override without the typed confirmation changes nothing.
      mvc.perform(
              operatorPost(
                  "/relay/item/redrive",
                  "id",
                  "order-6-ack",
                  "reason",
                  "retry please",
                  "overrideHorizon",
                  "true"))
          .andExpect(status().isBadRequest());
      assertThat(state(db, "order-6-ack")).isEqualTo("failed");

      mvc.perform(
              operatorPost(
                  "/relay/item/redrive",
                  "id",
                  "order-6-ack",
                  "reason",
                  "receiver keeps IDs 90 days, INC-8",
                  "overrideHorizon",
                  "true",
                  "confirm",
                  "order-6-ack"))
          .andExpect(status().isSeeOther());
      assertThat(state(db, "order-6-ack")).isEqualTo("ready");
      WorkDetail d = Admin.create(db.dataSource(), db.schema()).show("order-6-ack").orElseThrow();
      assertThat(d.redrives())
          .singleElement()
          .satisfies(
              r -> {
                assertThat(r.actor()).isEqualTo(ConsoleApp.OPERATOR);
                assertThat(r.forced()).isTrue();
                assertThat(r.reason()).isEqualTo("receiver keeps IDs 90 days, INC-8");
              });
    }
  }

  @Test
  void operatorCancelsSupersedesAndCountsAPurgeAsHimself(TestDatabase db) throws Exception {
    failed(db, "order-7-ack", "{}");
    failed(db, "order-8-ack", "{\"amount\": 10}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      mvc.perform(
              operatorPost(
                  "/relay/item/cancel", "id", "order-7-ack", "reason", "customer withdrew"))
          .andExpect(status().isSeeOther());
      assertThat(state(db, "order-7-ack")).isEqualTo("cancelled");

      mvc.perform(
              operatorPost(
                  "/relay/item/supersede",
                  "id",
                  "order-8-ack",
                  "newId",
                  "order-8-ack-v2",
                  "payload",
                  "{\"amount\": 12}",
                  "reason",
                  "amount corrected"))
          .andExpect(status().isSeeOther())
          .andExpect(header().string("Location", "/relay/item?id=order-8-ack-v2&done=superseded"));
      assertThat(state(db, "order-8-ack")).isEqualTo("cancelled");
      assertThat(state(db, "order-8-ack-v2")).isEqualTo("ready");

      Admin admin = Admin.create(db.dataSource(), db.schema());
      assertThat(admin.show("order-7-ack").orElseThrow().cancels())
          .singleElement()
          .satisfies(c -> assertThat(c.actor()).isEqualTo(ConsoleApp.OPERATOR));
      assertThat(admin.show("order-8-ack-v2").orElseThrow().supersedes())
          .singleElement()
          .satisfies(l -> assertThat(l.actor()).isEqualTo(ConsoleApp.OPERATOR));

      // Bad input: invalid JSON for the replacement is refused, nothing enqueued.
      mvc.perform(
              operatorPost(
                  "/relay/item/supersede",
                  "id",
                  "order-8-ack-v2",
                  "newId",
                  "order-8-ack-v3",
                  "payload",
                  "{not json",
                  "reason",
                  "typo"))
          .andExpect(status().isBadRequest());
      assertThat(state(db, "order-8-ack-v2")).isEqualTo("ready");
      assertThat(
              db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id = 'order-8-ack-v3'"))
          .isZero();

      String purge =
          body(
              mvc.perform(operatorPost("/relay/purge", "reason", "sizing the next purge"))
                  .andExpect(status().isOk()));
      assertThat(purge).contains("Nothing was deleted");
      assertThat(
              db.queryString(
                  "SELECT actor || ' / ' || reason || ' / ' || dry_run FROM {schema}.purge_audit"))
          .isEqualTo(ConsoleApp.OPERATOR + " / sizing the next purge / true");
      mvc.perform(operatorPost("/relay/purge")).andExpect(status().isBadRequest());
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(3);
    }
  }

  @Test
  void signInReturnsToTheConsolePageAskedForAndFollowsNoOtherSavedRequest(TestDatabase db)
      throws Exception {
    failed(db, "order-16-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      // The application's own chain saves its refused page in the shared session, as a refused
      // /favicon.ico or /error dispatch was saved under relay serve: the console must not follow.
      MockHttpSession session = new MockHttpSession();
      mvc.perform(get("/hello").accept(MediaType.TEXT_HTML).session(session));
      assertThat(session.getAttribute("SPRING_SECURITY_SAVED_REQUEST")).isNotNull();
      mvc.perform(signIn(session)).andExpect(redirectedUrl("/relay"));

      // A console page asked for before signing in is where sign-in returns.
      MockHttpSession second = new MockHttpSession();
      mvc.perform(get("/relay/item?id=order-16-ack").accept(MediaType.TEXT_HTML).session(second))
          .andExpect(redirectedUrl("/relay/login"));
      String back = mvc.perform(signIn(second)).andReturn().getResponse().getRedirectedUrl();
      assertThat(back).startsWith("http://localhost/relay/item?id=order-16-ack");
      // The icon every page names is public, like the style sheet.
      mvc.perform(get("/relay/favicon.svg"))
          .andExpect(status().isOk())
          .andExpect(header().string("Content-Type", "image/svg+xml;charset=UTF-8"));
    }
  }

  private static MockHttpServletRequestBuilder signIn(MockHttpSession session) {
    return post("/relay/login")
        .session(session)
        .with(csrf())
        .param("username", ConsoleApp.OPERATOR)
        .param("password", ConsoleApp.OPERATOR_PASSWORD);
  }

  /** An enum constant's name, a record's toString, an ISO-8601 duration: never on a page. */
  static final Pattern INTERNAL_NAME =
      Pattern.compile("\\b[A-Z]{2,}(_[A-Z]+)+\\b|\\b[A-Z]\\w+\\[\\w+=|\\bPT\\d");

  @Test
  void pagesSpeakInWordsAndAnEndedItemOffersOnlyTheActionsThatApply(TestDatabase db)
      throws Exception {
    failed(db, "order-11-ack", "{}");
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, claim_generation, outcome) VALUES"
            + " ('order-12-ack', 'order_ack', '{}', 'done', now(), now(), 1, 1, 'delivered'),"
            + " ('order-13-ack', 'order_ack', '{}', 'cancelled', now(), now(), 1, 1, null);"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES"
            + " ('order-14-ack', 'never_registered', '{}')");
    // Attempted long ago, of a kind with no registered policy: the default horizon has passed.
    failed(db, "order-15-ack", "never_registered", "{}");
    db.execute(
        "UPDATE {schema}.outbox SET first_attempt_at = now() - interval '30 days'"
            + " WHERE work_id = 'order-15-ack'");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      Map<String, String> pages = new LinkedHashMap<>();
      for (String page :
          List.of(
              "/relay",
              "/relay/work",
              "/relay/failures",
              "/relay/kinds",
              "/relay/charts",
              "/relay/purge",
              "/relay/item?id=order-11-ack",
              "/relay/item?id=order-12-ack",
              "/relay/item?id=order-13-ack",
              "/relay/item?id=order-14-ack",
              "/relay/item?id=order-15-ack")) {
        pages.put(page, body(mvc.perform(get(page).with(OPERATOR)).andExpect(status().isOk())));
      }
      pages.put(
          "redrive of done work",
          body(
              mvc.perform(operatorPost("/relay/item/redrive", "id", "order-12-ack", "reason", "x"))
                  .andExpect(status().isConflict())));
      pages.put(
          "redrive past the default horizon",
          body(
              mvc.perform(operatorPost("/relay/item/redrive", "id", "order-15-ack", "reason", "x"))
                  .andExpect(status().isConflict())));
      pages.put(
          "purge dry run", body(mvc.perform(operatorPost("/relay/purge", "reason", "sizing"))));
      pages.forEach(
          (page, html) -> {
            Matcher internal = INTERNAL_NAME.matcher(html);
            assertThat(internal.find() ? internal.group() : null).as(page).isNull();
          });
      assertThat(pages.get("/relay/purge")).contains("kept 7 d 0 h after it ended");
      assertThat(pages.get("redrive of done work"))
          .contains("the work is not failed")
          .contains("name=\"force\" value=\"true\"");
      assertThat(pages.get("/relay/item?id=order-15-ack")).contains("the default 1 d 0 h");

      // Failed: every action. Done: redrive only (with the override). Cancelled: no cancel.
      // Ready: no redrive (it has not ended).
      assertThat(pages.get("/relay/item?id=order-11-ack"))
          .contains("id=\"redrive\"", "id=\"cancel\"", "id=\"supersede\"");
      assertThat(pages.get("/relay/item?id=order-12-ack"))
          .contains("id=\"redrive\"", "not failed: you will be asked to confirm it")
          .doesNotContain("id=\"cancel\"", "id=\"supersede\"")
          .contains("Cancel: the work has already ended (done).")
          .contains("Supersede: the work is done, so its effect happened");
      assertThat(pages.get("/relay/item?id=order-13-ack"))
          .contains("id=\"redrive\"", "id=\"supersede\"")
          .doesNotContain("id=\"cancel\"");
      assertThat(pages.get("/relay/item?id=order-14-ack"))
          .contains("id=\"cancel\"", "id=\"supersede\"")
          .doesNotContain("id=\"redrive\"")
          .contains("Redrive: the work has not ended (it is ready).");

      // An empty audit says so; a recorded one shows its lines.
      assertThat(pages.get("/relay/item?id=order-12-ack"))
          .contains("No redrives, cancellations or supersedes recorded.")
          .doesNotContain("class=\"audit\"");
      mvc.perform(operatorPost("/relay/item/cancel", "id", "order-14-ack", "reason", "withdrawn"))
          .andExpect(status().isSeeOther());
      String cancelled =
          body(mvc.perform(get("/relay/item").param("id", "order-14-ack").with(OPERATOR)));
      assertThat(cancelled)
          .contains("class=\"audit\"")
          .contains("from ready: cancelled")
          .doesNotContain("No redrives, cancellations or supersedes recorded.");
    }
  }

  @Test
  void behindTheApplicationsOwnFilterChainTheConsoleKeepsItsRules(TestDatabase db)
      throws Exception {
    failed(db, "order-10-ack", "{}");
    try (ConsoleApp app =
        ConsoleApp.start(db, new Class<?>[] {ConsoleApp.App.class, ConsoleApp.OwnSecurity.class})) {
      MockMvc mvc = app.mvc();
      mvc.perform(get("/hello")).andExpect(status().isUnauthorized());
      mvc.perform(get("/relay")).andExpect(redirectedUrl("/relay/login"));
      mvc.perform(
              post("/relay/item/redrive")
                  .with(VIEWER)
                  .with(csrf())
                  .param("id", "order-10-ack")
                  .param("reason", "viewer tries"))
          .andExpect(status().isForbidden());
      mvc.perform(operatorPost("/relay/item/redrive", "id", "order-10-ack", "reason", "INC-10"))
          .andExpect(status().isSeeOther());
      assertThat(state(db, "order-10-ack")).isEqualTo("ready");
    }
  }
}
