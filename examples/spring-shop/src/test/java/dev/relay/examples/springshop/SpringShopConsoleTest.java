package dev.relay.examples.springshop;

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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;

/**
 * The starter's console inside the running shop, behind the shop's own Spring Security, over real
 * HTTP (a client with a cookie jar, as a browser keeps its session): the operator signs in with the
 * form, filters failed work, opens an item, redrives it and sees the audit line with his name; a
 * viewer sees no action forms and a forged POST is refused; a POST without the CSRF token is
 * refused; a {@code <script>} payload renders as text; signing out ends the session.
 */
@RelayDatabaseTest
class SpringShopConsoleTest {
  private static final BCryptPasswordEncoder BCRYPT = new BCryptPasswordEncoder(4);
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");
  private static final String SCRIPT = "<script>alert(1)</script>";

  /** One browser: its own cookies (session), never following redirects by itself. */
  private static final class Browser {
    final HttpClient http =
        HttpClient.newBuilder()
            .cookieHandler(new CookieManager())
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
    final String base;

    Browser(int port) {
      this.base = "http://127.0.0.1:" + port;
    }

    HttpResponse<String> get(String path) throws Exception {
      return http.send(
          HttpRequest.newBuilder(URI.create(base + path)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, Map<String, String> form) throws Exception {
      String body =
          form.entrySet().stream()
              .map(
                  e ->
                      URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)
                          + "="
                          + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
              .collect(Collectors.joining("&"));
      return http.send(
          HttpRequest.newBuilder(URI.create(base + path))
              .header("Content-Type", "application/x-www-form-urlencoded")
              .POST(HttpRequest.BodyPublishers.ofString(body))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    }

    /** The CSRF token the page's forms carry. */
    static String csrf(HttpResponse<String> page) {
      Matcher m = CSRF.matcher(page.body());
      assertThat(m.find()).as("a CSRF field in\n" + page.body()).isTrue();
      return m.group(1);
    }

    void signIn(String user, String password) throws Exception {
      HttpResponse<String> login = get("/relay/login");
      assertThat(login.statusCode()).isEqualTo(200);
      HttpResponse<String> r =
          post("/relay/login", form("username", user, "password", password, "_csrf", csrf(login)));
      assertThat(r.statusCode()).isEqualTo(302);
      assertThat(r.headers().firstValue("Location").orElseThrow()).endsWith("/relay");
    }
  }

  private static Map<String, String> form(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  private static void failed(TestDatabase db, String workId, String payload) throws Exception {
    // A kind the shop has no handler for, so a redriven item stays ready for the assertions.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, claim_generation, last_error_kind, last_error,"
            + " outcome) VALUES ('"
            + workId
            + "', 'legacy_note', '"
            + payload
            + "', 'failed', now(), now(), 3, 3, 'http_500', 'provider said 500',"
            + " 'not_delivered')");
  }

  private static String state(TestDatabase db, String workId) throws Exception {
    return db.queryString("SELECT state FROM {schema}.work WHERE work_id = '" + workId + "'");
  }

  /**
   * The shop on the test's database with a free port, the operator mina ({@code mina-pw}) and the
   * viewer tom ({@code tom-pw}), and {@code properties} besides.
   */
  static ConfigurableApplicationContext start(TestDatabase db, String... properties) {
    return new SpringApplicationBuilder(SpringShopApplication.class)
        .properties(
            "spring.datasource.url=" + db.jdbcUrl() + "&currentSchema=" + db.schema(),
            "relay.schema=" + db.schema(),
            "relay.poll-interval=200ms",
            "server.port=0",
            "shop.operator.name=mina",
            "shop.operator.hash=" + BCRYPT.encode("mina-pw"),
            "shop.viewer.name=tom",
            "shop.viewer.hash=" + BCRYPT.encode("tom-pw"))
        .properties(properties)
        .run();
  }

  @Test
  void operatorRedrivesAsHimselfViewerCannotActCsrfIsRequiredAndPayloadsAreText(TestDatabase db)
      throws Exception {
    try (ConfigurableApplicationContext app = start(db)) {
      int port = Integer.parseInt(app.getEnvironment().getRequiredProperty("local.server.port"));
      failed(db, "note-7", "{\"note\": \"" + SCRIPT + "\"}");
      failed(db, "note-8", "{}");

      // Anonymous: sent to sign-in; the shop's other pages need the shop's own sign-in.
      Browser anonymous = new Browser(port);
      HttpResponse<String> r = anonymous.get("/relay");
      assertThat(r.statusCode()).isEqualTo(302);
      assertThat(r.headers().firstValue("Location").orElseThrow()).endsWith("/relay/login");
      assertThat(anonymous.get("/actuator").statusCode()).isIn(401, 404);
      assertThat(anonymous.get("/anything").statusCode()).isEqualTo(401);
      // A wrong password does not sign in.
      HttpResponse<String> login = anonymous.get("/relay/login");
      r =
          anonymous.post(
              "/relay/login",
              form("username", "mina", "password", "guess", "_csrf", Browser.csrf(login)));
      assertThat(r.headers().firstValue("Location").orElseThrow()).contains("/relay/login?error");

      // The operator signs in, filters failed work and opens the item.
      Browser mina = new Browser(port);
      mina.signIn("mina", "mina-pw");
      HttpResponse<String> list = mina.get("/relay/work?state=failed&errorKind=http_500");
      assertThat(list.statusCode()).isEqualTo(200);
      assertThat(list.body())
          .contains("href=\"/relay/item?id=note-7\"")
          .contains("href=\"/relay/item?id=note-8\"");
      HttpResponse<String> item = mina.get("/relay/item?id=note-7");
      assertThat(item.statusCode()).isEqualTo(200);
      assertThat(item.headers().firstValue("Content-Security-Policy").orElseThrow())
          .contains("script-src 'self'")
          .contains("frame-ancestors 'none'");
      // The payload is text: escaped; the console's own script is the only script element.
      assertThat(item.body())
          .contains("&lt;script&gt;alert(1)&lt;/script&gt;")
          .containsOnlyOnce("<script")
          .contains("<script src=\"/relay/console.js\" defer></script>")
          .contains("id=\"redrive\"");

      // Without the CSRF token the redrive is refused and nothing changes.
      r = mina.post("/relay/item/redrive", form("id", "note-7", "reason", "no token"));
      assertThat(r.statusCode()).isEqualTo(403);
      assertThat(state(db, "note-7")).isEqualTo("failed");

      // With it, the redrive goes through and the audit names the operator.
      r =
          mina.post(
              "/relay/item/redrive",
              form("id", "note-7", "reason", "provider fixed, INC-7", "_csrf", Browser.csrf(item)));
      assertThat(r.statusCode()).isEqualTo(303);
      assertThat(state(db, "note-7")).isEqualTo("ready");
      HttpResponse<String> after = mina.get(r.headers().firstValue("Location").orElseThrow());
      assertThat(after.body())
          .containsPattern(
              "<td>redrive</td><td>mina</td><td>provider fixed, INC-7</td><td>from failed,"
                  + " generation 3</td>");
      assertThat(
              db.queryString("SELECT actor FROM {schema}.redrive_audit WHERE work_id = 'note-7'"))
          .isEqualTo("mina");

      // The viewer reads, sees no action forms, and a forged POST (a valid token of the
      // viewer's own session) is refused.
      Browser tom = new Browser(port);
      tom.signIn("tom", "tom-pw");
      HttpResponse<String> viewerItem = tom.get("/relay/item?id=note-8");
      assertThat(viewerItem.statusCode()).isEqualTo(200);
      assertThat(viewerItem.body())
          .contains("note-8")
          .doesNotContain("id=\"redrive\"")
          .doesNotContain("id=\"cancel\"")
          .doesNotContain("id=\"supersede\"");
      for (String action : new String[] {"redrive", "cancel"}) {
        r =
            tom.post(
                "/relay/item/" + action,
                form("id", "note-8", "reason", "forged", "_csrf", Browser.csrf(viewerItem)));
        assertThat(r.statusCode()).as(action).isEqualTo(403);
      }
      assertThat(state(db, "note-8")).isEqualTo("failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.cancel_audit")).isZero();

      // Signing out ends the session: the next request is sent to sign-in again.
      HttpResponse<String> overview = mina.get("/relay");
      assertThat(overview.statusCode()).isEqualTo(200);
      r = mina.post("/relay/logout", form("_csrf", Browser.csrf(overview)));
      assertThat(r.statusCode()).isEqualTo(302);
      assertThat(r.headers().firstValue("Location").orElseThrow()).endsWith("/relay/login?logout");
      r = mina.get("/relay/item?id=note-7");
      assertThat(r.statusCode()).isEqualTo(302);
      assertThat(r.headers().firstValue("Location").orElseThrow()).endsWith("/relay/login");
    }
  }
}
