package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * What a person sees, over real HTTP with a signed-in session (so Boot's {@code /error} dispatch
 * runs as it does in production), when a page is asked for wrongly: a parameter missing, or not a
 * number or not true or false where the page needs one, or a filter value the list refuses. Every
 * one is the console's own page (HTML, escaped, naming the parameter), headed by what happened: a
 * page that could not be shown, or an action refused with nothing changed. Also the header a
 * signed-out visitor sees, and outcome evidence in words.
 */
@RelayDatabaseTest
class ConsoleBadRequestTest {
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");
  private static final String CANNOT_SHOW = "<h1>Cannot show this page</h1>";
  private static final String NOTHING_CHANGED = "<h1>Nothing changed</h1>";

  /** One browser: its own cookies (the session), never following redirects by itself. */
  private static final class Browser {
    final HttpClient http =
        HttpClient.newBuilder()
            .cookieHandler(new CookieManager())
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
    final String base;
    String csrf;

    Browser(ConsoleApp app) {
      this.base = "http://127.0.0.1:" + app.port();
    }

    HttpResponse<String> get(String path) throws Exception {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(base + path)).header("Accept", "text/html").build(),
              HttpResponse.BodyHandlers.ofString());
      Matcher m = CSRF.matcher(r.body());
      if (m.find()) {
        csrf = m.group(1);
      }
      return r;
    }

    /** A form POST with the CSRF token of the last page fetched, and name, value pairs. */
    HttpResponse<String> post(String path, String... params) throws Exception {
      String form =
          IntStream.iterate(0, i -> i < params.length, i -> i + 2)
              .mapToObj(i -> encode(params[i]) + "=" + encode(params[i + 1]))
              .collect(Collectors.joining("&", "_csrf=" + encode(csrf) + "&", ""));
      return http.send(
          HttpRequest.newBuilder(URI.create(base + path))
              .header("Content-Type", "application/x-www-form-urlencoded")
              .header("Accept", "text/html")
              .POST(HttpRequest.BodyPublishers.ofString(form))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    }

    void signIn(String user, String password) throws Exception {
      get("/relay/login");
      HttpResponse<String> r = post("/relay/login", "username", user, "password", password);
      assertThat(r.headers().firstValue("Location"))
          .hasValueSatisfying(l -> assertThat(l).endsWith("/relay"));
      get("/relay");
    }

    private static String encode(String s) {
      return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
  }

  /** A 400 that is the console's own page: HTML, its headers, its heading and message. */
  private static String consolePage(HttpResponse<String> r, String heading) {
    assertThat(r.statusCode()).as(r.uri().toString()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type"))
        .as(r.uri().toString())
        .hasValue("text/html;charset=UTF-8");
    assertThat(r.headers().firstValue("Content-Security-Policy"))
        .as(r.uri().toString())
        .hasValueSatisfying(csp -> assertThat(csp).contains("frame-ancestors 'none'"));
    assertThat(r.body())
        .as(r.uri().toString())
        .contains(heading)
        .contains("<p class=\"refused\" role=\"alert\">")
        .doesNotContain("\"status\":400")
        .doesNotContain("Whitelabel");
    return r.body();
  }

  @Test
  void aMissingOrMalformedParameterGetsTheConsolesOwnPageNamingIt(TestDatabase db)
      throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = new Browser(app);
      olga.signIn(ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD);

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
          .contains("olderThan")
          .doesNotContain(NOTHING_CHANGED);
      assertThat(consolePage(olga.get("/relay/search?json=%7B%7D&window=2w"), CANNOT_SHOW))
          .contains("window must be 1h, 24h or 7d, was 2w");
      assertThat(consolePage(olga.get("/relay/item?id="), CANNOT_SHOW)).contains("workId is empty");

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
      Browser victor = new Browser(app);
      victor.signIn(ConsoleApp.VIEWER, ConsoleApp.VIEWER_PASSWORD);
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
