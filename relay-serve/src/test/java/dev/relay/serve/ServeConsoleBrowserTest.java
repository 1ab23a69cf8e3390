package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.console.Chromium;
import dev.relay.console.ConsoleFlows;
import dev.relay.console.ConsolePauseFlow;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The console as {@code relay serve} serves it, in a real headless Chromium (Debian's {@code
 * chromium} and {@code chromium-driver}): the browser's own requests (its {@code /favicon.ico})
 * must not send sign-in to an error page; pausing a kind from the console holds it from serve's own
 * workers until resumed; the overview updates by itself, payload search, the limits and schedules
 * pages, a bulk redrive of 1,000 failed items and a bulk purge, each from a filtered list with its
 * preview ({@code ConsoleFlows}, the console's own browser flows). Without Chromium the test fails,
 * saying how to install it: it is never skipped.
 */
@RelayDatabaseTest
class ServeConsoleBrowserTest {
  /** A work ID with no place to break: it must wrap, not widen the page. */
  static final String LONG_ID = "x".repeat(200);

  @Test
  void signingInLandsOnTheOverviewAndLongIdsWrap(TestDatabase db, @TempDir Path dir)
      throws Exception {
    Path config = dir.resolve("application.yml");
    Files.writeString(
        config,
        """
        server: {port: 0}
        relay:
          poll-interval: 200ms
          shutdown-grace: 5s
          kinds: {tick: {handler: log}, receipt: {handler: log}, invoice: {handler: log}}
          console:
            refresh: 1s
            users: [{name: olga, hash: '%s', role: operator}]
        """
            .formatted(BCrypt.hashpw("s3cret-op", BCrypt.gensalt(4))));
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      // No worker runs this kind: it waits in the list.
      Outbox.builder().schema(db.schema()).build().enqueue(c, Work.of(LONG_ID, "unserved", "{}"));
      c.commit();
    }
    try (Serving serving = ServeTest.serve(db, config, new ByteArrayOutputStream())) {
      String base = "http://127.0.0.1:" + serving.port();
      try (Chromium chromium = Chromium.start()) {
        browse(chromium.web(), base);
        // Pause from the console with serve's own workers running: they claim nothing of it.
        ConsolePauseFlow.pauseAndResume(
            chromium.web(), base, db, "olga", "receipt", "invoice", kind -> {}, name -> {});
        // The console's other flows, as in its own browser tests, against serve.
        ConsoleFlows.overviewUpdatesItself(chromium.web(), base, db);
        ConsoleFlows.searchPayload(chromium.web(), base, db, name -> {});
        ConsoleFlows.limitsAndSchedules(chromium.web(), base, db, name -> {});
        ConsoleFlows.bulkRedrive(chromium.web(), base, db, "olga", name -> {});
        ConsoleFlows.bulkPurge(chromium.web(), base, db, "olga", name -> {});
      }
      sessionCookie(base);
    }
  }

  private static void browse(WebDriver web, String base) {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    // The address `relay serve` prints: the browser asks for /favicon.ico on its own.
    web.get(base + "/");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    web.findElement(By.name("username")).sendKeys("olga");
    web.findElement(By.name("password")).sendKeys("s3cret-op");
    web.findElement(By.cssSelector("#login button[type=submit]")).click();
    wait.until(ExpectedConditions.not(ExpectedConditions.urlContains("/login")));
    // The overview, whose GET the console saved as the page to return to (hence ?continue).
    assertThat(URI.create(web.getCurrentUrl()).getPath())
        .as("after sign-in at %s, titled %s", web.getCurrentUrl(), web.getTitle())
        .isEqualTo("/relay");
    assertThat(web.getTitle()).startsWith("Overview");
    assertThat(web.findElement(By.cssSelector("span.user")).getText()).contains("olga");
    Cookie session = web.manage().getCookieNamed("JSESSIONID");
    assertThat(session).isNotNull();
    assertThat(session.getSameSite()).isEqualTo("Lax");
    assertThat(session.isHttpOnly()).isTrue();
    assertThat(session.isSecure()).as("plain HTTP on loopback").isFalse();
    assertFitsTheWindow(web);

    // A 200-character work ID wraps in the list and on its page instead of widening them.
    web.get(base + "/relay/work");
    wait.until(ExpectedConditions.titleContains("Work"));
    assertThat(web.findElement(By.tagName("main")).getText()).contains(LONG_ID.substring(0, 20));
    assertFitsTheWindow(web);
    web.findElement(By.partialLinkText(LONG_ID.substring(0, 20))).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("dl.facts")));
    assertFitsTheWindow(web);
  }

  private static void assertFitsTheWindow(WebDriver web) {
    JavascriptExecutor js = (JavascriptExecutor) web;
    long scrollWidth =
        ((Number) js.executeScript("return document.documentElement.scrollWidth")).longValue();
    long windowWidth = ((Number) js.executeScript("return window.innerWidth")).longValue();
    assertThat(scrollWidth).as("the page's scroll width").isLessThanOrEqualTo(windowWidth);
  }

  /**
   * The session cookie over HTTP: {@code SameSite=Lax}, {@code HttpOnly}, and not {@code Secure},
   * also when a client says {@code X-Forwarded-Proto: https}: no proxy is trusted unless configured
   * (a trusted TLS proxy in front: {@link ServeBehindProxyTest}).
   */
  private static void sessionCookie(String base) throws Exception {
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    List<String> plain = cookies(client, base, null);
    assertThat(plain).singleElement().asString().contains("SameSite=Lax").doesNotContain("Secure");
    List<String> forged = cookies(client, base, "https");
    assertThat(forged)
        .singleElement()
        .asString()
        .contains("SameSite=Lax")
        .contains("HttpOnly")
        .doesNotContain("Secure");
    HttpResponse<Void> favicon =
        client.send(
            HttpRequest.newBuilder(URI.create(base + "/favicon.ico")).build(),
            HttpResponse.BodyHandlers.discarding());
    assertThat(favicon.statusCode()).isIn(200, 204);
  }

  private static List<String> cookies(HttpClient client, String base, String forwardedProto)
      throws Exception {
    HttpRequest.Builder r =
        HttpRequest.newBuilder(URI.create(base + "/relay/login")).timeout(Duration.ofSeconds(10));
    if (forwardedProto != null) {
      r.header("X-Forwarded-Proto", forwardedProto);
    }
    HttpResponse<String> page = client.send(r.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(page.statusCode()).isEqualTo(200);
    return page.headers().allValues("Set-Cookie");
  }
}
