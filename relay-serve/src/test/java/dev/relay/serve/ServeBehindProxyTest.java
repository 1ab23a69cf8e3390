package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.console.Chromium;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * {@code relay serve} behind a TLS-terminating reverse proxy ({@link TlsProxy}, a self-signed
 * certificate made in the test), trusted by address with {@code
 * server.tomcat.remoteip.internal-proxies}: Chromium signs in over HTTPS through the proxy, every
 * redirect stays on HTTPS and the session cookie is {@code Secure}, {@code HttpOnly} and {@code
 * SameSite=Lax}. A client that reaches serve directly is not the trusted proxy: its {@code
 * X-Forwarded-Proto} makes nothing secure and its {@code X-Forwarded-For} does not move it out of
 * its address's sign-in count, and neither does one sent through the proxy (the proxy appends the
 * real client address). The sign-in limits answer 429 with the sign-in page, also for the right
 * password.
 */
@RelayDatabaseTest
class ServeBehindProxyTest {
  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

  @Test
  void signInOverTlsThroughATrustedProxyAndLimitsNobodyCanDodge(TestDatabase db, @TempDir Path dir)
      throws Exception {
    String olga = BCrypt.hashpw("s3cret-op", BCrypt.gensalt(4));
    String sam = BCrypt.hashpw("s3cret-view", BCrypt.gensalt(4));
    Path config = dir.resolve("application.yml");
    Files.writeString(
        config,
        """
        server:
          port: 0
          tomcat:
            remoteip:
              internal-proxies: %s/32
        relay:
          poll-interval: 200ms
          shutdown-grace: 5s
          kinds: {tick: {handler: log}}
          console:
            sign-in: {max-failures-per-user: 3, max-failures-per-address: 6, window: 10m}
            users:
              - {name: olga, hash: '%s', role: operator}
              - {name: sam, hash: '%s', role: viewer}
        """
            .formatted(TlsProxy.PROXY_ADDRESS, olga, sam));
    try (Serving serving = ServeTest.serve(db, config, new ByteArrayOutputStream());
        TlsProxy proxy = TlsProxy.start(dir, serving.port())) {
      String direct = "http://127.0.0.1:" + serving.port();
      String https = proxy.base();

      // Chromium through the proxy: redirects stay on https, the cookie is Secure.
      try (Chromium chromium = Chromium.start("--ignore-certificate-errors")) {
        WebDriver web = chromium.web();
        WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(60));
        web.get(https + "/");
        wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
        assertThat(web.getCurrentUrl()).startsWith(https + "/relay/login");
        web.findElement(By.name("username")).sendKeys("olga");
        web.findElement(By.name("password")).sendKeys("s3cret-op");
        web.findElement(By.cssSelector("#login button[type=submit]")).click();
        wait.until(ExpectedConditions.not(ExpectedConditions.urlContains("/login")));
        // The overview, the page saved before sign-in (hence ?continue), on https.
        assertThat(web.getCurrentUrl()).matches(Pattern.quote(https + "/relay") + "(\\?continue)?");
        assertThat(web.getTitle()).startsWith("Overview");
        Cookie session = web.manage().getCookieNamed("JSESSIONID");
        assertThat(session).isNotNull();
        assertThat(session.isSecure()).as("over https through the proxy").isTrue();
        assertThat(session.isHttpOnly()).isTrue();
        assertThat(session.getSameSite()).isEqualTo("Lax");
      }

      Client viaProxy = new Client(https, true);
      Client straight = new Client(direct, false);
      // Redirects: https through the proxy; a direct client's X-Forwarded-Proto is not trusted.
      assertThat(viaProxy.get("/", Map.of()).headers().firstValue("Location"))
          .hasValue(https + "/relay");
      HttpResponse<String> spoofed =
          straight.get("/relay/login", Map.of("X-Forwarded-Proto", "https"));
      assertThat(spoofed.headers().allValues("Set-Cookie"))
          .singleElement()
          .asString()
          .contains("HttpOnly")
          .contains("SameSite=Lax")
          .doesNotContain("Secure");
      assertThat(
              straight
                  .get("/", Map.of("X-Forwarded-Proto", "https"))
                  .headers()
                  .firstValue("Location"))
          .hasValue(direct + "/relay");

      // Per user: three wrong passwords for sam, then even the right one is refused, with 429.
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> wrong = viaProxy.signIn("sam", "guess-" + i, Map.of());
        assertThat(wrong.statusCode()).as(wrong.body()).isEqualTo(302);
        assertThat(wrong.headers().firstValue("Location")).hasValue(https + "/relay/login?error");
      }
      HttpResponse<String> locked = viaProxy.signIn("sam", "s3cret-view", Map.of());
      assertThat(locked.statusCode()).isEqualTo(429);
      assertThat(locked.headers().firstValue("Retry-After")).isPresent();
      assertThat(Long.parseLong(locked.headers().firstValue("Retry-After").orElseThrow()))
          .isBetween(1L, 600L);
      assertThat(locked.body()).contains("Too many failed sign-ins").contains("id=\"login\"");

      // Per address: a direct client changing X-Forwarded-For (and user name) on every attempt
      // still counts as 127.0.0.1, which already has sam's three failures.
      int failures = 3;
      HttpResponse<String> refused = null;
      for (int i = 0; i < 10 && refused == null; i++) {
        HttpResponse<String> r =
            straight.signIn("nobody-" + i, "guess", Map.of("X-Forwarded-For", "198.51.100." + i));
        if (r.statusCode() == 429) {
          refused = r;
        } else {
          assertThat(r.statusCode()).isEqualTo(302);
          failures++;
        }
      }
      assertThat(refused).as("refused once the address had 6 failures").isNotNull();
      assertThat(failures).isEqualTo(6);
      // Nor through the proxy with a forged X-Forwarded-For: olga's right password is refused
      // from this address too.
      HttpResponse<String> forged =
          viaProxy.signIn("olga", "s3cret-op", Map.of("X-Forwarded-For", "203.0.113.9"));
      assertThat(forged.statusCode()).isEqualTo(429);
    }
  }

  /** An HTTP client with its own cookies, straight to serve or through the proxy. */
  private static final class Client {
    private final String base;
    private final HttpClient http;

    Client(String base, boolean tls) throws Exception {
      this.base = base;
      HttpClient.Builder b =
          HttpClient.newBuilder()
              .version(HttpClient.Version.HTTP_1_1)
              .cookieHandler(new CookieManager())
              .connectTimeout(Duration.ofSeconds(10));
      if (tls) {
        b.sslContext(TlsProxy.trustingClient());
      }
      this.http = b.build();
    }

    HttpResponse<String> get(String path, Map<String, String> headers) throws Exception {
      HttpRequest.Builder r =
          HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60));
      headers.forEach(r::header);
      return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Fetches the sign-in page for a CSRF token, then posts the form. */
    HttpResponse<String> signIn(String user, String password, Map<String, String> headers)
        throws Exception {
      HttpResponse<String> page = get("/relay/login", headers);
      Matcher m = CSRF.matcher(page.body());
      assertThat(m.find()).as(page.body()).isTrue();
      String form =
          "username="
              + URLEncoder.encode(user, StandardCharsets.UTF_8)
              + "&password="
              + URLEncoder.encode(password, StandardCharsets.UTF_8)
              + "&_csrf="
              + URLEncoder.encode(m.group(1), StandardCharsets.UTF_8);
      HttpRequest.Builder r =
          HttpRequest.newBuilder(URI.create(base + "/relay/login"))
              .timeout(Duration.ofSeconds(60))
              .header("Content-Type", "application/x-www-form-urlencoded")
              .POST(HttpRequest.BodyPublishers.ofString(form));
      headers.forEach(r::header);
      return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }
  }
}
