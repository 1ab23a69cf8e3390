package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

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

/**
 * One browser over real HTTP, for the console's tests that need what a browser's requests do
 * (Boot's {@code /error} dispatch, the session cookie) without the browser: its own cookies (the
 * session), never following redirects by itself, keeping the CSRF token of the last page it
 * fetched.
 */
final class Browser {
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

  final HttpClient http;
  final String base;
  String csrf;

  Browser(ConsoleApp app) {
    this(app, new CookieManager());
  }

  /** Another tab of {@code browser}: the same cookies, and the same page's CSRF token. */
  Browser(ConsoleApp app, Browser browser) {
    this(app, (CookieManager) browser.http.cookieHandler().orElseThrow());
    this.csrf = browser.csrf;
  }

  private Browser(ConsoleApp app, CookieManager cookies) {
    this.http =
        HttpClient.newBuilder()
            .cookieHandler(cookies)
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
    this.base = "http://127.0.0.1:" + app.port();
  }

  HttpResponse<String> get(String path) throws Exception {
    return get(path, "text/html");
  }

  /** A GET asking for {@code accept}; keeps the page's CSRF token for the next form. */
  HttpResponse<String> get(String path, String accept) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(base + path)).header("Accept", accept).build(),
            HttpResponse.BodyHandlers.ofString());
    Matcher m = CSRF.matcher(r.body());
    if (m.find()) {
      csrf = m.group(1);
    }
    return r;
  }

  /** A form POST with the CSRF token of the last page fetched, and name, value pairs. */
  HttpResponse<String> post(String path, String... params) throws Exception {
    return send("POST", path, true, params);
  }

  /**
   * A form sent with any method, with the CSRF token of the last page fetched or without one, and
   * name, value pairs.
   */
  HttpResponse<String> send(String method, String path, boolean withCsrf, String... params)
      throws Exception {
    String form =
        IntStream.iterate(0, i -> i < params.length, i -> i + 2)
            .mapToObj(i -> encode(params[i]) + "=" + encode(params[i + 1]))
            .collect(Collectors.joining("&", withCsrf ? "_csrf=" + encode(csrf) + "&" : "", ""));
    return send(method, path, "application/x-www-form-urlencoded", form);
  }

  /**
   * A request with a body of {@code contentType} as a browser or a script may send it, and header
   * name, value pairs.
   */
  HttpResponse<String> send(
      String method, String path, String contentType, String body, String... headers)
      throws Exception {
    HttpRequest.Builder r =
        HttpRequest.newBuilder(URI.create(base + path))
            .header("Content-Type", contentType)
            .header("Accept", "text/html")
            .method(method, HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      r.header(headers[i], headers[i + 1]);
    }
    return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A browser signed in as the operator. */
  static Browser operator(ConsoleApp app) throws Exception {
    return signedIn(app, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD);
  }

  /** A browser signed in as the viewer. */
  static Browser viewer(ConsoleApp app) throws Exception {
    return signedIn(app, ConsoleApp.VIEWER, ConsoleApp.VIEWER_PASSWORD);
  }

  private static Browser signedIn(ConsoleApp app, String user, String password) throws Exception {
    Browser browser = new Browser(app);
    browser.signIn(user, password);
    return browser;
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
