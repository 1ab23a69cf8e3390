package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * What a person sees, over real HTTP with a signed-in session (so Boot's {@code /error} dispatch
 * runs as it does in production), when a page is asked for wrongly: a parameter missing, or not a
 * number or not true or false where the page needs one, or a filter value the list refuses; a
 * method the address does not take (405), or an address with no page (404). Every one is the
 * console's own page (HTML, escaped, naming the parameter or the address), headed by what happened:
 * a page that could not be shown, or an action refused with nothing changed. Sign-in and CSRF still
 * come first, and their refusals are the console's too: a stale form or a missing role gets its 403
 * page (a stale Sign out with nobody signed in lands signed out instead), a form sent signed out
 * goes to the console's sign-in, and the sign-out address opened as a page gets 405. Also the
 * header a signed-out visitor sees, and outcome evidence in words.
 */
@RelayDatabaseTest
class ConsoleBadRequestTest {
  private static final String CANNOT_SHOW = "<h1>Cannot show this page</h1>";
  private static final String NOTHING_CHANGED = "<h1>Nothing changed</h1>";
  private static final String NOT_FOUND = "<h1>Not found</h1>";
  private static final String FORM_REFUSED = "<h1>Form refused; nothing changed</h1>";

  /** A 400 that is the console's own page: HTML, its headers, its heading and message. */
  private static String consolePage(HttpResponse<String> r, String heading) {
    return consolePage(r, 400, heading);
  }

  /**
   * An answer of {@code status} that is the console's own page: HTML, its headers, its layout (the
   * header naming the product), its heading and message, never Spring's error body.
   */
  static String consolePage(HttpResponse<String> r, int status, String heading) {
    assertThat(r.statusCode()).as(r.uri().toString()).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type"))
        .as(r.uri().toString())
        .hasValue("text/html;charset=UTF-8");
    assertThat(r.headers().firstValue("Content-Security-Policy"))
        .as(r.uri().toString())
        .hasValueSatisfying(csp -> assertThat(csp).contains("frame-ancestors 'none'"));
    assertThat(r.body())
        .as(r.uri().toString())
        .contains("<header><nav><strong>Relay</strong>")
        .contains(heading)
        .contains("<p class=\"refused\" role=\"alert\">")
        .doesNotContain("\"status\":")
        .doesNotContain("Whitelabel")
        // a refusal has nothing live: it neither updates itself nor says it does
        .doesNotContain("data-refresh")
        .doesNotContain("updates itself");
    return r.body();
  }

  @Test
  void aMissingOrMalformedParameterGetsTheConsolesOwnPageNamingIt(TestDatabase db)
      throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);

      // Pages (GET): nothing was going to change, so the page says it could not be shown.
      assertThat(consolePage(olga.get("/relay/item"), CANNOT_SHOW))
          .contains("parameter id is missing")
          // the signed-in header stays, so the operator can go on from here
          .contains("href=\"/relay/work\"");
      assertThat(consolePage(olga.get("/relay/item/download"), CANNOT_SHOW))
          .contains("parameter id is missing");
      assertThat(consolePage(olga.get("/relay/bulk/preview?state=failed"), CANNOT_SHOW))
          .contains("parameter action is missing");
      assertThat(consolePage(olga.get("/relay/bulk?id=seven"), CANNOT_SHOW))
          .contains("parameter id must be a whole number, was &#39;seven&#39;");
      assertThat(
              consolePage(olga.get("/relay/bulk/preview?action=redrive&force=maybe"), CANNOT_SHOW))
          .contains("parameter force must be true or false, was &#39;maybe&#39;");
      // A value holding markup is repeated as text, and cut.
      String markup =
          consolePage(
              olga.get("/relay/bulk?id=%3Cscript%3Ealert(1)%3C%2Fscript%3E" + "9".repeat(300)),
              CANNOT_SHOW);
      assertThat(markup)
          .contains("was &#39;&lt;script&gt;alert(1)&lt;/script&gt;999")
          .doesNotContain("9".repeat(101))
          .containsOnlyOnce("<script");
      // The list's own refusals of a filter read the same way: nothing was going to change.
      assertThat(consolePage(olga.get("/relay/work?olderThan=soon"), CANNOT_SHOW))
          .contains("Created at least &#39;soon&#39; ago: not an age")
          .doesNotContain(NOTHING_CHANGED);
      assertThat(consolePage(olga.get("/relay/search?json=%7B%7D&window=2w"), CANNOT_SHOW))
          .contains("window must be 1h, 24h or 7d, was 2w");
      assertThat(consolePage(olga.get("/relay/item?id="), CANNOT_SHOW))
          .contains("Work ID is empty");

      // Actions (POST): refused, and nothing changed.
      assertThat(consolePage(olga.post("/relay/item/redrive", "reason", "x"), NOTHING_CHANGED))
          .contains("parameter id is missing");
      assertThat(
              consolePage(
                  olga.post(
                      "/relay/item/redrive", "id", "order-1-ack", "force", "maybe", "reason", "x"),
                  NOTHING_CHANGED))
          .contains("parameter force must be true or false, was &#39;maybe&#39;");
      assertThat(
              consolePage(
                  olga.post(
                      "/relay/item/supersede", "id", "order-1-ack", "payload", "{}", "reason", "x"),
                  NOTHING_CHANGED))
          .contains("parameter newId is missing");
      assertThat(consolePage(olga.post("/relay/bulk/continue", "id", "seven"), NOTHING_CHANGED))
          .contains("parameter id must be a whole number");
      assertThat(consolePage(olga.post("/relay/bulk", "reason", "x"), NOTHING_CHANGED))
          .contains("parameter action is missing");
      assertThat(ConsoleTest.state(db, "order-1-ack")).isEqualTo("failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
    }
  }

  /**
   * A refusal names what the person filled in, in the form's words, and repeats what was typed:
   * never Relay's internal field names ({@code filter.state}, {@code workId}), its "invalid admin
   * request" prefix, or an age as an ISO-8601 duration. An unknown bulk action is not found, like
   * an unknown item.
   */
  @Test
  void refusalsUseTheFormsWordsAndWhatWasTyped(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-11-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);
      List<String> pages = new ArrayList<>();
      // The list's filters, on the list, on a bulk preview and on a bulk action's start.
      for (String page : new String[] {"/relay/work?", "/relay/bulk/preview?action=cancel&"}) {
        pages.add(
            assertRefused(
                olga.get(page + "newerThan=999999999d"),
                CANNOT_SHOW,
                "Created less than &#39;999999999d&#39; ago: an age is at most 100 years"
                    + " (36500d)"));
        pages.add(
            assertRefused(
                olga.get(page + "olderThan=soon"),
                CANNOT_SHOW,
                "Created at least &#39;soon&#39; ago: not an age; give a number and s, m, h or d"
                    + " (30s, 5m, 2h, 7d)"));
        pages.add(
            assertRefused(
                olga.get(page + "state=bogus"),
                CANNOT_SHOW,
                "State &#39;bogus&#39; is not one of ready, running, done, failed, cancelled"));
        pages.add(
            assertRefused(
                olga.get(page + "outcome=maybe"),
                CANNOT_SHOW,
                "Outcome &#39;maybe&#39; is not one of delivered, not_delivered, unknown"));
        pages.add(
            assertRefused(
                olga.get(page + "blocked=nope"),
                CANNOT_SHOW,
                "Held by a dependency &#39;nope&#39; is neither any nor one of dependency_failed,"));
      }
      pages.add(
          assertRefused(
              olga.post("/relay/bulk", "action", "cancel", "state", "bogus", "reason", "x"),
              NOTHING_CHANGED,
              "State &#39;bogus&#39; is not one of ready, running, done, failed, cancelled"));

      // An unknown bulk action: not found, as an unknown item is, with the list one link away.
      pages.add(
          assertRefused(
              olga.get("/relay/bulk?id=999"), 404, NOT_FOUND, "no bulk action has ID 999</p>"));
      pages.add(
          assertRefused(
              olga.post("/relay/bulk/continue", "id", "999"),
              404,
              NOT_FOUND,
              "<a href=\"/relay/bulk\">Open the bulk actions</a>"));

      // The supersede form's fields, by their labels.
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/supersede",
                  "id",
                  "order-11-ack",
                  "newId",
                  "has space",
                  "payload",
                  "{}",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "New work ID &#39;has space&#39; may only contain A-Z a-z 0-9 . _ - : / @ + = #"));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/supersede",
                  "id",
                  "order-11-ack",
                  "newId",
                  "order-11-ack-v2",
                  "payload",
                  "{not json",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Payload (JSON) "));

      for (String page : pages) {
        assertThat(page)
            .doesNotContain("invalid admin request")
            .doesNotContain("invalid work")
            .doesNotContain("filter.")
            .doesNotContain("filter age")
            .doesNotContain("workId")
            .doesNotContainPattern(ConsoleTest.INTERNAL_NAME);
      }
      assertThat(ConsoleTest.state(db, "order-11-ack")).isEqualTo("failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
    }
  }

  /**
   * Every action's fields, refused by Relay, in the form's words: the label the form shows and what
   * was typed, never Relay's name of the argument ({@code resumeAt}, {@code reason}) or its
   * "invalid admin request" prefix (before the fix: "invalid admin request: resumeAt is
   * 2020-01-01T00:00:00Z, not after ..." and "invalid admin request: reason is empty").
   */
  @Test
  void everyActionsFieldsAreRefusedInTheFormsWords(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-12-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);
      olga.get("/relay/pauses");
      List<String> pages = new ArrayList<>();
      String longReason = "<b>" + "r".repeat(2_001);

      // Pause: the resume time, the target, the reason.
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/pauses/pause",
                  "kind",
                  "mail",
                  "resumeAt",
                  "2020-01-01T00:00",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Resume by itself at (UTC, optional) &#39;2020-01-01T00:00&#39; is"
                  + " not after the database clock&#39;s now ("));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/pauses/pause", "kind", "mail", "resumeAt", "tomorrow", "reason", "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Resume by itself at (UTC, optional) &#39;tomorrow&#39; is not a"
                  + " time (2026-12-04T05:00 in UTC, or an instant with its offset)"));
      pages.add(
          assertRefused(
              olga.post("/relay/pauses/pause", "queue", " ", "kind", "", "reason", "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Queue and Kind are both empty: name a queue, a kind, or both"));
      pages.add(
          assertRefused(
              olga.post("/relay/pauses/pause", "queue", "has space", "reason", "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Queue &#39;has space&#39; must be 1-100 characters from"));
      pages.add(
          assertRefused(
              olga.post("/relay/pauses/pause", "kind", "mail", "reason", " "),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));
      pages.add(
          assertRefused(
              olga.post("/relay/pauses/pause", "kind", "mail", "reason", longReason),
              NOTHING_CHANGED,
              "role=\"alert\">Reason &#39;&lt;b&gt;"
                  + "r".repeat(97)
                  + "\u2026&#39; has 2004 characters; the limit is 2000</p>"));
      // Resume: the reason.
      pages.add(
          assertRefused(
              olga.post("/relay/pauses/resume", "queue", "", "kind", "mail", "reason", ""),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));

      // The item's actions: the reason, the override's confirmation, the new work ID.
      olga.get("/relay/item?id=order-12-ack");
      pages.add(
          assertRefused(
              olga.post("/relay/item/cancel", "id", "order-12-ack", "reason", ""),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));
      pages.add(
          assertRefused(
              olga.post("/relay/item/redrive", "id", "order-12-ack", "reason", " "),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/redrive",
                  "id",
                  "order-12-ack",
                  "force",
                  "true",
                  "confirm",
                  "order-12",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Type the work ID to confirm the override &#39;order-12&#39; is not"
                  + " the work ID; type order-12-ack exactly to redrive anyway</p>"));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/redrive",
                  "id",
                  "order-12-ack",
                  "overrideHorizon",
                  "true",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Type the work ID to confirm the override is empty; type"
                  + " order-12-ack exactly to redrive anyway</p>"));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/supersede",
                  "id",
                  "order-12-ack",
                  "newId",
                  "order-12-ack-v2",
                  "payload",
                  "{}",
                  "reason",
                  ""),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));
      pages.add(
          assertRefused(
              olga.post(
                  "/relay/item/supersede",
                  "id",
                  "order-12-ack",
                  "newId",
                  "order-12-ack",
                  "payload",
                  "{}",
                  "reason",
                  "x"),
              NOTHING_CHANGED,
              "role=\"alert\">New work ID &#39;order-12-ack&#39; has the old work&#39;s ID; a"
                  + " corrected intention needs a new work ID</p>"));

      // A bulk action's start: the reason and the action; the purge dry run: the reason.
      pages.add(
          assertRefused(
              olga.post("/relay/bulk", "action", "cancel", "state", "failed", "reason", " "),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));
      pages.add(
          assertRefused(
              olga.post("/relay/bulk", "action", "delete", "state", "failed", "reason", "x"),
              NOTHING_CHANGED,
              "role=\"alert\">Action &#39;delete&#39; is not a bulk action (redrive, cancel or"
                  + " purge)</p>"));
      olga.get("/relay/purge");
      pages.add(
          assertRefused(
              olga.post("/relay/purge", "reason", ""),
              NOTHING_CHANGED,
              "role=\"alert\">Reason is empty</p>"));

      for (String page : pages) {
        assertThat(page)
            .doesNotContain("invalid admin request")
            .doesNotContain("resumeAt is")
            .doesNotContain("reason is")
            .doesNotContain("queue and kind")
            .doesNotContain("replacement has")
            .doesNotContain("confirm must")
            .doesNotContain("action &#39;")
            .doesNotContainPattern(ConsoleTest.INTERNAL_NAME);
      }
      assertThat(ConsoleTest.state(db, "order-12-ack")).isEqualTo("failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause")).isZero();
    }
  }

  /** The actor is no field: it is the signed-in user's name, named as such, with the name. */
  @Test
  void aRefusedActorIsTheSignedInUsersName() {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/relay/item/cancel");
    request.setRemoteUser("a".repeat(250));
    RuntimeException said =
        ConsoleForms.inFormsWords(
            new InvalidAdminRequestException("actor", "has 250 characters; the limit is 200"),
            request);
    assertThat(said)
        .isInstanceOf(ConsoleRefusal.class)
        .hasMessage(
            "Your user name (recorded as the actor) '"
                + "a".repeat(100)
                + "\u2026' has 250 characters; the limit is 200");
    // An argument no form fills in stays as Relay words it.
    InvalidAdminRequestException other = new InvalidAdminRequestException("window", "is bad");
    assertThat(ConsoleForms.inFormsWords(other, request)).isSameAs(other);
  }

  private static String assertRefused(HttpResponse<String> r, String heading, String message) {
    return assertRefused(r, 400, heading, message);
  }

  private static String assertRefused(
      HttpResponse<String> r, int status, String heading, String message) {
    String page = consolePage(r, status, heading);
    assertThat(page).as(r.uri().toString()).contains(message);
    return page;
  }

  @Test
  void aMethodTheAddressDoesNotTakeGetsTheConsoles405PageWithAllow(TestDatabase db)
      throws Exception {
    ConsoleTest.failed(db, "order-3-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);

      // A form's address visited as a page: says where its form is, whatever the client accepts.
      for (String accept : new String[] {"text/html", "application/json"}) {
        HttpResponse<String> visited =
            olga.get("/relay/item/redrive?id=order-3-ack&reason=%3Cscript%3Ealert(1)", accept);
        assertThat(visited.headers().firstValue("Allow")).hasValue("POST");
        assertThat(consolePage(visited, 405, CANNOT_SHOW))
            .contains(
                "GET /relay/item/redrive is not a page: this address takes a form submission"
                    + " (POST) from the item&#39;s page (open the item from the work list)."
                    + " Open that page and use its button.")
            // the address names the item: its page is one link away
            .contains("<a href=\"/relay/item?id=order-3-ack\">Open the item order-3-ack</a>")
            // the query is not repeated; the only script is the layout's own
            .containsOnlyOnce("<script");
      }
      // An item's form naming no item, or naming one in markup (escaped, and encoded in the link).
      assertThat(consolePage(olga.get("/relay/item/supersede"), 405, CANNOT_SHOW))
          .contains("<a href=\"/relay\">Go to the overview</a>");
      assertThat(
              consolePage(
                  olga.get("/relay/item/cancel?id=%3Cscript%3Ealert(1)%3C%2Fscript%3E"),
                  405,
                  CANNOT_SHOW))
          .contains(
              "<a href=\"/relay/item?id=%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">"
                  + "Open the item &lt;script&gt;alert(1)&lt;/script&gt;</a>")
          .containsOnlyOnce("<script");
      // Another form's address: the page that shows its form.
      assertThat(consolePage(olga.get("/relay/pauses/resume"), 405, CANNOT_SHOW))
          .contains("from the Pauses page")
          .contains("<a href=\"/relay/pauses\">Open the Pauses page</a>");
      assertThat(consolePage(olga.get("/relay/bulk/continue?id=7"), 405, CANNOT_SHOW))
          .contains("from the bulk action&#39;s page (under Bulk actions)")
          .contains("<a href=\"/relay/bulk?id=7\">Open bulk action 7</a>");
      // a bulk action's form naming none (or not a number): the overview
      assertThat(consolePage(olga.get("/relay/bulk/continue?id=x"), 405, CANNOT_SHOW))
          .contains("<a href=\"/relay\">Go to the overview</a>");

      // A form posted to a page: nothing changed, and the page is one link away.
      olga.get("/relay/work");
      HttpResponse<String> posted = olga.post("/relay/work", "state", "failed");
      assertThat(posted.headers().firstValue("Allow")).hasValue("GET");
      assertThat(consolePage(posted, 405, NOTHING_CHANGED))
          .contains(
              "POST /relay/work: this address is a page and takes GET only."
                  + " Nothing changed; open the page instead.")
          .contains("<a href=\"/relay/work\">Open /relay/work</a>");

      // Another method on a form's address, and on an address taking both.
      HttpResponse<String> put = olga.send("PUT", "/relay/item/redrive", true, "id", "order-3-ack");
      assertThat(put.headers().firstValue("Allow")).hasValue("POST");
      assertThat(consolePage(put, 405, NOTHING_CHANGED))
          .contains("PUT /relay/item/redrive is not a page");
      HttpResponse<String> delete = olga.send("DELETE", "/relay/purge", true);
      assertThat(delete.headers().allValues("Allow"))
          .singleElement()
          .satisfies(
              allow -> assertThat(allow.split(",\\s*")).containsExactlyInAnyOrder("GET", "POST"));
      assertThat(consolePage(delete, 405, NOTHING_CHANGED)).contains("DELETE /relay/purge: ");

      // A viewer has no button to use.
      Browser victor = Browser.viewer(app);
      assertThat(consolePage(victor.get("/relay/item/cancel"), 405, CANNOT_SHOW))
          .contains(
              "from the item&#39;s page (open the item from the work list),"
                  + " which only an operator can send.")
          .contains("<a href=\"/relay\">Go to the overview</a>");
      // The item's page is one a viewer can open.
      assertThat(consolePage(victor.get("/relay/item/cancel?id=order-3-ack"), 405, CANNOT_SHOW))
          .contains("<a href=\"/relay/item?id=order-3-ack\">Open the item order-3-ack</a>");
      assertThat(ConsoleTest.state(db, "order-3-ack")).isEqualTo("failed");
    }
  }

  @Test
  void signInCsrfAndRolesStillComeBeforeTheMethodIsChecked(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-4-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      // Signed out: sent to sign-in, learning nothing of which addresses exist or what they take.
      Browser anonymous = new Browser(app);
      for (String path : new String[] {"/relay/item/redrive", "/relay/no-such-page"}) {
        HttpResponse<String> r = anonymous.get(path);
        assertThat(r.statusCode()).as(path).isEqualTo(302);
        assertThat(r.headers().firstValue("Location"))
            .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));
      }
      anonymous.get("/relay/login");
      HttpResponse<String> signedOut = anonymous.post("/relay/work", "state", "failed");
      assertThat(signedOut.statusCode()).isEqualTo(302);
      assertThat(signedOut.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));

      // Signed in: a POST or PUT without its CSRF token is refused (403) before the method is.
      Browser olga = Browser.operator(app);
      for (String method : new String[] {"POST", "PUT"}) {
        HttpResponse<String> r = olga.send(method, "/relay/work", false, "state", "failed");
        assertThat(r.statusCode()).as(method).isEqualTo(403);
        assertThat(r.body()).doesNotContain("this address");
      }
      // A viewer's POST is refused by role (403), not answered as a wrong method.
      Browser victor = Browser.viewer(app);
      HttpResponse<String> viewer = victor.post("/relay/work", "state", "failed");
      assertThat(viewer.statusCode()).isEqualTo(403);
      assertThat(viewer.body()).doesNotContain("this address");
      assertThat(ConsoleTest.state(db, "order-4-ack")).isEqualTo("failed");
    }
  }

  @Test
  void anAddressWithNoPageGetsTheConsoles404Page(TestDatabase db) throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);
      for (String accept : new String[] {"text/html", "application/json"}) {
        assertThat(
                consolePage(
                    olga.get("/relay/nope%3Cscript%3Ealert(1)%3C/script%3E", accept),
                    404,
                    NOT_FOUND))
            .contains(
                "There is no page at /relay/nope&lt;script&gt;alert(1)&lt;/script&gt;."
                    + " Check the address, or start again here.")
            .contains("<a href=\"/relay\">Go to the overview</a>")
            .containsOnlyOnce("<script");
      }
      // A long address is repeated cut; a form posted to no page gets the same page.
      assertThat(consolePage(olga.get("/relay/" + "x".repeat(300)), 404, NOT_FOUND))
          .doesNotContain("x".repeat(100));
      assertThat(consolePage(olga.post("/relay/item/nope"), 404, NOT_FOUND))
          .contains("There is no page at /relay/item/nope.");
      // The application's own addresses stay the application's.
      HttpResponse<String> own = olga.get("/no-such-page");
      assertThat(own.statusCode()).isEqualTo(404);
      assertThat(own.body()).doesNotContain("<strong>Relay</strong>");
    }
    // Without Boot's static resources Spring finds no handler at all: the same page.
    try (ConsoleApp app = ConsoleApp.start(db, "spring.web.resources.add-mappings=false")) {
      Browser olga = Browser.operator(app);
      assertThat(consolePage(olga.get("/relay/nope"), 404, NOT_FOUND))
          .contains("There is no page at /relay/nope.");
    }
  }

  /**
   * The operator with the page of item {@code id} open, signed out in another tab: the page's forms
   * (and its token, kept as the browser's) belong to a session that has ended.
   */
  private static Browser signedOutInAnotherTab(ConsoleApp app, String id) throws Exception {
    Browser olga = Browser.operator(app);
    olga.get(Format.url("/relay/item", "id", id));
    new Browser(app, olga).post("/relay/logout");
    return olga;
  }

  @Test
  void aStaleFormGetsTheConsoles403PageLinkingToItsPageAndChangesNothing(TestDatabase db)
      throws Exception {
    ConsoleTest.failed(db, "order-6-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      // Signed out in another tab: the item page's form now belongs to a session that has ended.
      Browser olga = signedOutInAnotherTab(app, "order-6-ack");
      String stale = olga.csrf;
      assertThat(ConsoleTest.state(db, "order-6-ack")).isEqualTo("failed");
      for (String action : new String[] {"redrive", "cancel"}) {
        HttpResponse<String> r =
            olga.post("/relay/item/" + action, "id", "order-6-ack", "reason", "INC-6");
        assertThat(consolePage(r, 403, FORM_REFUSED))
            .as(action)
            .contains(
                "This form was stale: it came from a page opened in an earlier session, which has"
                    + " since ended (it expired, was signed out in another tab, or the server"
                    + " restarted). Nothing changed. Open the page again")
            .contains("<a href=\"/relay/item?id=order-6-ack\">Open the item order-6-ack again</a>")
            // signed out: the header offers no page
            .doesNotContain("href=\"/relay/work\"");
        assertThat(ConsoleTest.state(db, "order-6-ack")).as(action).isEqualTo("failed");
      }
      // The browser's session cookie gone (a restart, an expired session): the same page. A form
      // holding markup is repeated as text, in the link's label and (encoded) in its address.
      Browser cookieless = new Browser(app);
      cookieless.csrf = stale;
      assertThat(
              consolePage(
                  cookieless.post(
                      "/relay/item/cancel", "id", "<script>alert(1)</script>", "reason", "x"),
                  403,
                  FORM_REFUSED))
          .contains(
              "<a href=\"/relay/item?id=%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">"
                  + "Open the item &lt;script&gt;alert(1)&lt;/script&gt; again</a>")
          .containsOnlyOnce("<script");
      // Each form links to its own page; one whose page cannot be known, to the overview.
      assertThat(
              consolePage(
                  cookieless.post("/relay/pauses/pause", "kind", "mail"), 403, FORM_REFUSED))
          .contains("<a href=\"/relay/pauses\">Open the Pauses page again</a>");
      assertThat(
              consolePage(
                  cookieless.post(
                      "/relay/bulk", "action", "redrive", "state", "failed", "reason", "x"),
                  403,
                  FORM_REFUSED))
          .contains(
              "<a href=\"/relay/bulk/preview?action=redrive&amp;state=failed\">"
                  + "Open the preview again</a>");
      assertThat(consolePage(cookieless.post("/relay/bulk/continue", "id", "7"), 403, FORM_REFUSED))
          .contains("<a href=\"/relay/bulk?id=7\">Open bulk action 7 again</a>");
      assertThat(consolePage(cookieless.post("/relay/item/redrive"), 403, FORM_REFUSED))
          .contains("<a href=\"/relay\">Go to the overview</a>");
      // The sign-in page left open across a restart.
      assertThat(
              consolePage(
                  cookieless.post("/relay/login", "username", "olga", "password", "x"),
                  403,
                  FORM_REFUSED))
          .contains("<a href=\"/relay/login\">Open the sign-in page again</a>");

      // Signed in again in another session: the old page's token is not this session's.
      olga.signIn(ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD);
      String fresh = olga.csrf;
      olga.csrf = stale;
      assertThat(
              consolePage(
                  olga.post("/relay/item/redrive", "id", "order-6-ack", "reason", "INC-6"),
                  403,
                  FORM_REFUSED))
          .contains("This form was stale")
          // signed in: the header shows the user and the pages, as on every page
          .contains("href=\"/relay/work\"")
          .contains("olga");
      // Signed in, no token at all: refused in other words.
      olga.csrf = fresh;
      assertThat(
              consolePage(
                  olga.send(
                      "POST", "/relay/item/redrive", false, "id", "order-6-ack", "reason", "x"),
                  403,
                  FORM_REFUSED))
          .contains("This form carried no security token");
      assertThat(ConsoleTest.state(db, "order-6-ack")).isEqualTo("failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause")).isZero();

      // The form, opened again, works.
      olga.get("/relay/item?id=order-6-ack");
      assertThat(
              olga.post("/relay/item/redrive", "id", "order-6-ack", "reason", "INC-6").statusCode())
          .isEqualTo(303);
      assertThat(ConsoleTest.state(db, "order-6-ack")).isEqualTo("ready");
    }
  }

  /**
   * The Sign out button of a page opened in a session that has since ended (signed out in another
   * tab, expired, or the server restarted) asks for what has already happened: it lands where a
   * sign-out does, without the stale form's 403. CSRF still guards everything else: another stale
   * form is refused, and so is a stale Sign out of a session signed in again, which stays signed
   * in.
   */
  @Test
  void aStaleSignOutAfterTheSessionEndedLandsSignedOutAndOtherStaleFormsAreStillRefused(
      TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-10-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      // Signed out in another tab; then the Sign out button of the item page still open.
      Browser olga = signedOutInAnotherTab(app, "order-10-ack");
      String stale = olga.csrf;
      assertSignedOutPage(olga, olga.post("/relay/logout"));

      // The same button after a restart (the session cookie gone), and one carrying no token
      // from a browser signed in nowhere: nobody to sign out, the same signed-out page.
      Browser cookieless = new Browser(app);
      cookieless.csrf = stale;
      assertSignedOutPage(cookieless, cookieless.post("/relay/logout"));
      assertSignedOutPage(cookieless, cookieless.send("POST", "/relay/logout", false));

      // Any other stale form is refused as before, and changes nothing.
      olga.csrf = stale;
      assertThat(
              consolePage(
                  olga.post("/relay/item/cancel", "id", "order-10-ack", "reason", "INC-10"),
                  403,
                  FORM_REFUSED))
          .contains("This form was stale");
      assertThat(ConsoleTest.state(db, "order-10-ack")).isEqualTo("failed");

      // Signed in (in a new session): a Sign out with an old page's token is refused, and the
      // session goes on.
      Browser signedIn = Browser.operator(app);
      signedIn.csrf = stale;
      assertThat(consolePage(signedIn.post("/relay/logout"), 403, FORM_REFUSED))
          .contains("This form was stale");
      assertThat(signedIn.get("/relay").statusCode()).isEqualTo(200);
    }
  }

  /** What a sign-out answers: the sign-in page saying so, with no error; signed out after it. */
  private static void assertSignedOutPage(Browser browser, HttpResponse<String> r)
      throws Exception {
    assertThat(r.statusCode()).as(r.uri().toString()).isEqualTo(302);
    String location = r.headers().firstValue("Location").orElseThrow();
    assertThat(location).endsWith("/relay/login?logout");
    HttpResponse<String> page = browser.get(location.substring(browser.base.length()));
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body())
        .contains("Signed out.")
        .doesNotContain("Form refused")
        .doesNotContain("role=\"alert\"");
    assertThat(browser.get("/relay").headers().firstValue("Location"))
        .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));
  }

  @Test
  void anActionWithoutTheOperatorRoleGetsThe403PageNamingTheRole(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-7-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser victor = Browser.viewer(app);
      victor.get("/relay/item?id=order-7-ack");
      HttpResponse<String> r =
          victor.post("/relay/item/redrive", "id", "order-7-ack", "reason", "viewer tries");
      assertThat(consolePage(r, 403, "<h1>Operator role needed; nothing changed</h1>"))
          .contains(
              "POST /relay/item/redrive is an action, and actions need the operator role"
                  + " (RELAY_OPERATOR). You are signed in as victor, with the viewer role"
                  + " (RELAY_VIEWER). Nothing changed.")
          .contains("<a href=\"/relay/item?id=order-7-ack\">Open the item order-7-ack again</a>");
      assertThat(ConsoleTest.state(db, "order-7-ack")).isEqualTo("failed");

      // A user of the application with neither role: no page, in the console's words.
      Browser ursula = new Browser(app);
      ursula.signIn(ConsoleApp.OUTSIDER, ConsoleApp.OUTSIDER_PASSWORD);
      assertThat(consolePage(ursula.get("/relay"), 403, CANNOT_SHOW))
          .contains(
              "The console&#39;s pages need the viewer role (RELAY_VIEWER) or the operator role"
                  + " (RELAY_OPERATOR). You are signed in as ursula, with neither.");
      // The application's own paths keep the application's answers.
      assertThat(ursula.get("/hello").body()).isEqualTo("hello");
    }
  }

  @Test
  void aFormSentSignedOutGoesToTheConsolesSignInAndReturnsToTheFormsPage(TestDatabase db)
      throws Exception {
    ConsoleTest.failed(db, "order-8-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      // No session, no token, any method (before: the application's /login, through /error).
      Browser anonymous = new Browser(app);
      for (String method : new String[] {"POST", "PUT", "DELETE"}) {
        for (String path : new String[] {"/relay/purge", "/relay/nope"}) {
          HttpResponse<String> r = anonymous.send(method, path, false, "reason", "x");
          assertThat(r.statusCode()).as(method + " " + path).isEqualTo(302);
          assertThat(r.headers().firstValue("Location"))
              .as(method + " " + path)
              .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));
        }
      }
      // A form's action: after signing in, the page that shows its form, not the action.
      Browser olga = new Browser(app);
      HttpResponse<String> r =
          olga.send("POST", "/relay/item/cancel", false, "id", "order-8-ack", "reason", "x");
      assertThat(r.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));
      olga.get("/relay/login");
      HttpResponse<String> signedIn =
          olga.post(
              "/relay/login",
              "username",
              ConsoleApp.OPERATOR,
              "password",
              ConsoleApp.OPERATOR_PASSWORD);
      String back = signedIn.headers().firstValue("Location").orElseThrow();
      assertThat(back).endsWith("/relay/item?id=order-8-ack&continue");
      assertThat(olga.get(back.substring(olga.base.length())).body())
          .contains("<form method=\"post\" id=\"cancel\"");
      assertThat(ConsoleTest.state(db, "order-8-ack")).isEqualTo("failed");

      // The application's own form, signed out, is the application's.
      HttpResponse<String> own = anonymous.send("POST", "/hello", false);
      assertThat(own.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).doesNotContain("/relay"));
    }
  }

  @Test
  void signingOutByAddressGets405WithAllowPostAndKeepsTheSession(TestDatabase db) throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db)) {
      for (Browser user : new Browser[] {Browser.operator(app), Browser.viewer(app)}) {
        HttpResponse<String> r = user.get("/relay/logout");
        assertThat(r.headers().firstValue("Allow")).hasValue("POST");
        assertThat(consolePage(r, 405, CANNOT_SHOW))
            .contains(
                "GET /relay/logout is not a page: signing out is a button, Sign out at the top of"
                    + " every console page (this one too).")
            .contains("You are still signed in.")
            .containsPattern(
                "<form method=\"post\" class=\"logout\" action=\"/relay/logout\">"
                    + "<input type=\"hidden\" name=\"_csrf\" value=\"[^\"]+\">");
        assertThat(user.get("/relay").statusCode()).isEqualTo(200);
        // The button on that page signs out.
        HttpResponse<String> out = user.post("/relay/logout");
        assertThat(out.headers().firstValue("Location"))
            .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login?logout"));
        assertThat(user.get("/relay").statusCode()).isEqualTo(302);
      }
      // Signed out, the address sends to sign-in like any other.
      HttpResponse<String> anonymous = new Browser(app).get("/relay/logout");
      assertThat(anonymous.statusCode()).isEqualTo(302);
      assertThat(anonymous.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay/login"));
    }
  }

  /**
   * No console address names a body type it consumes or a type it produces, so a browser never
   * meets a 415 or a 406: a form in another encoding reaches the page and is refused by parameter,
   * and a page asked for as JSON is still the page.
   */
  @Test
  void otherFormEncodingsAndAcceptHeadersGetNeither415Nor406(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-5-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);
      String boundary = "relay-test-boundary";
      String multipart =
          ("--%1$s\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n%2$s\r\n"
                  + "--%1$s\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\norder-5-ack\r\n"
                  + "--%1$s\r\nContent-Disposition: form-data; name=\"payload\"\r\n\r\n{}\r\n"
                  + "--%1$s--\r\n")
              .formatted(boundary, olga.csrf);
      // The form's fields are read (id is there), the missing one named.
      assertThat(
              consolePage(
                  olga.send(
                      "POST",
                      "/relay/item/supersede",
                      "multipart/form-data; boundary=" + boundary,
                      multipart),
                  NOTHING_CHANGED))
          .contains("parameter newId is missing");
      for (String type : new String[] {"text/plain", "application/json", "application/xml"}) {
        assertThat(
                consolePage(
                    olga.send(
                        "POST",
                        "/relay/item/redrive",
                        type,
                        "id=order-5-ack",
                        "X-CSRF-TOKEN",
                        olga.csrf),
                    NOTHING_CHANGED))
            .as(type)
            .contains("parameter id is missing");
      }
      HttpResponse<String> json = olga.get("/relay/work", "application/json");
      assertThat(json.statusCode()).isEqualTo(200);
      assertThat(json.headers().firstValue("Content-Type")).hasValue("text/html;charset=UTF-8");
      assertThat(ConsoleTest.state(db, "order-5-ack")).isEqualTo("failed");
    }
  }

  @Test
  void signedOutTheHeaderNamesTheProductOnly(TestDatabase db) throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser victor = new Browser(app);
      assertThat(header(victor.get("/relay/login").body()))
          .contains("<strong>Relay</strong>")
          .doesNotContain("<a ");
      victor.signIn(ConsoleApp.VIEWER, ConsoleApp.VIEWER_PASSWORD);
      assertThat(header(victor.get("/relay/login").body()))
          .contains("href=\"/relay/work\"")
          .contains("Sign out");
    }
  }

  @Test
  void outcomeEvidenceReadsInWordsWithTheStoredValueAsItsTitle(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-2-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser victor = Browser.viewer(app);
      String item = victor.get("/relay/item?id=order-2-ack").body();
      assertThat(item)
          .contains(
              "<dt>Outcome evidence</dt><dd title=\"not_delivered\">"
                  + "not delivered (refused, or never sent)</dd>");
      // The page's text never shows the stored token.
      assertThat(text(item)).doesNotContain("not_delivered");
      String list = victor.get("/relay/work?outcome=not_delivered").body();
      assertThat(list)
          .contains("order-2-ack")
          .contains("<td title=\"not_delivered\">not delivered (refused, or never sent)</td>");
    }
  }

  private static String header(String html) {
    return html.substring(html.indexOf("<header>"), html.indexOf("</header>"));
  }

  /** The page's text between its tags (attribute values, such as titles, left out). */
  private static String text(String html) {
    return html.replaceAll("<[^>]*>", "");
  }
}
