package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}):
 * sign in with the form, open the overview, follow the failures of one reason to the work list, see
 * the charts of the last hour, open an item, redrive it with a reason, and see the new state and
 * the audit line with the user's name; then, the session ended, press Cancel on a stale page; at
 * the end, the session ended again, press Sign out and land signed out. Without Chromium the test
 * fails, saying how to install it: it is never skipped.
 */
@RelayDatabaseTest
class ConsoleBrowserTest {
  @Test
  void operatorSignsInOpensAFailedItemAndRedrivesIt(TestDatabase db) throws Exception {
    ConsoleTest.failed(db, "order-9-ack", "{\"note\": \"<script>alert(1)</script>\"}");
    // An hour of traffic for the overview's chart: done work spread unevenly over the last hour,
    // and a few failures of another reason.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, claim_generation, outcome)"
            + " SELECT 'order-' || (1000 + g) || '-ack', 'order_ack', '{}', 'done',"
            + " now() - ((g * g * 37) % 3540) * interval '1 second'"
            + " - (1 + (g * 13) % 40) * interval '100 milliseconds',"
            + " now() - ((g * g * 37) % 3540) * interval '1 second', now(), 1, 1, 'delivered'"
            + " FROM generate_series(1, 600) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at,"
            + " completed_at, first_attempt_at, attempts, claim_generation, last_error_kind,"
            + " last_error, outcome)"
            + " SELECT 'mail-' || g, 'mail', '{}', 'failed', now() - g * interval '4 minutes',"
            + " now() - g * interval '4 minutes', now(), 8, 8, 'deadline',"
            + " 'business deadline passed', 'unknown' FROM generate_series(1, 9) g");
    ConsoleTest.registerKind(db, "order_ack");
    ConsoleTest.registerKind(db, "mail");
    try (ConsoleApp app = ConsoleApp.start(db, "relay.console.refresh=1s");
        Chromium chromium = Chromium.start()) {
      use(chromium.web(), app, db);
    }
  }

  private static void use(WebDriver web, ConsoleApp app, TestDatabase db) throws Exception {
    {
      WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
      String base = "http://127.0.0.1:" + app.port();

      signIn(web, base);
      assertThat(web.findElement(By.cssSelector("span.user")).getText()).contains("olga");
      assertThat(web.findElements(By.cssSelector("svg.chart rect.done"))).isNotEmpty();
      assertThat(web.findElements(By.cssSelector("svg.chart rect.failed"))).isNotEmpty();
      screenshot(web, "overview");
      ConsoleFlows.overviewUpdatesItself(web, base, db);

      web.findElement(By.linkText("Failures by reason")).click();
      wait.until(ExpectedConditions.titleContains("Failures by reason"));
      assertThat(web.findElement(By.cssSelector("table.failures")).getText())
          .contains("deadline")
          .contains("http_500");
      screenshot(web, "failures");
      web.findElement(By.linkText("Kinds")).click();
      wait.until(ExpectedConditions.titleContains("Kinds"));
      assertThat(web.findElement(By.cssSelector("table.kinds")).getText())
          .contains("order_ack")
          .contains("park as failed");
      screenshot(web, "kinds");
      ConsoleFlows.limitsAndSchedules(web, base, db, name -> screenshot(web, name));
      ConsoleFlows.searchPayload(web, base, db, name -> screenshot(web, name));
      // The charts read the rollup: let the maintenance leader fold what finished first.
      app.context().getBean(dev.relay.admin.Maintenance.class).runOnce();
      web.findElement(By.linkText("Charts")).click();
      wait.until(ExpectedConditions.titleContains("Charts"));
      assertThat(web.findElements(By.cssSelector("svg.throughput rect.done"))).isNotEmpty();
      assertThat(web.findElements(By.cssSelector("svg.throughput rect.failed"))).isNotEmpty();
      assertThat(web.findElements(By.cssSelector("svg.latency polyline.p95"))).isNotEmpty();
      assertThat(web.findElement(By.cssSelector("table.reasons")).getText()).contains("deadline");
      screenshot(web, "charts");
      web.findElement(By.linkText("Overview")).click();
      wait.until(ExpectedConditions.titleContains("Overview"));
      web.findElement(By.cssSelector("main table a[href*='errorKind=http_500']")).click();

      wait.until(ExpectedConditions.titleContains("Work"));
      web.findElement(By.linkText("order-9-ack")).click();

      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("redrive")));
      // The outcome evidence in words; the stored value (what the outcome filter takes) on hover.
      WebElement outcome =
          web.findElement(By.xpath("//dt[text()='Outcome evidence']/following-sibling::dd[1]"));
      assertThat(outcome.getText()).isEqualTo("not delivered (refused, or never sent)");
      assertThat(outcome.getDomAttribute("title")).isEqualTo("not_delivered");
      assertThat(web.findElement(By.cssSelector("pre.payload")).getText())
          .contains("<script>alert(1)</script>");
      assertThatThrownBy(() -> web.switchTo().alert()).isInstanceOf(NoAlertPresentException.class);
      web.findElement(By.cssSelector("#redrive textarea[name=reason]"))
          .sendKeys("provider back, INC-9");
      web.findElement(By.cssSelector("#redrive button[type=submit]")).click();

      wait.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("p.done")));
      String page = web.findElement(By.tagName("main")).getText();
      assertThat(page).contains("Redriven").contains("provider back, INC-9").contains("olga");
      assertThat(
              web.findElement(By.xpath("//dt[text()='State']/following-sibling::dd[1]")).getText())
          .isEqualTo("ready");
      assertThat(ConsoleTest.state(db, "order-9-ack")).isEqualTo("ready");
      screenshot(web, "item");
      staleFormAfterTheSessionEnds(web, base, db);

      // Pause a kind from the console, see it held while another kind is worked, resume it.
      ConsolePauseFlow.pauseAndResumeWithManualWorker(
          web, base, db, ConsoleApp.OPERATOR, name -> screenshot(web, name));

      web.findElement(By.cssSelector("form.logout button")).click();
      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
      web.get(base + "/relay");
      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
      staleSignOutAfterTheSessionEnds(web, base);
    }
  }

  /**
   * The session ends while a page is open (its cookie is gone, as after a restart): pressing Sign
   * out lands on the signed-out sign-in page, as a sign-out does, not on the stale form's 403.
   */
  private static void staleSignOutAfterTheSessionEnds(WebDriver web, String base) {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    signIn(web, base);
    web.manage().deleteCookieNamed("JSESSIONID");
    web.findElement(By.cssSelector("form.logout button")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    assertThat(web.findElement(By.tagName("main")).getText())
        .contains("Signed out.")
        .doesNotContain("Form refused");
    assertThat(web.getCurrentUrl()).endsWith("/relay/login?logout");
  }

  /**
   * The session ends while an item page is open (its cookie is gone, as after a restart): pressing
   * Cancel gets the console's 403 page saying the form was stale and nothing changed, whose link
   * leads through sign-in back to the item page.
   */
  private static void staleFormAfterTheSessionEnds(WebDriver web, String base, TestDatabase db)
      throws Exception {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay/item?id=order-9-ack");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("cancel")));
    web.findElement(By.cssSelector("#cancel textarea[name=reason]")).sendKeys("INC-9 again");
    web.manage().deleteCookieNamed("JSESSIONID");
    web.findElement(By.cssSelector("#cancel button[type=submit]")).click();

    wait.until(ExpectedConditions.titleContains("Form refused"));
    assertThat(web.findElement(By.tagName("main")).getText())
        .contains("This form was stale")
        .contains("Nothing changed");
    assertThat(ConsoleTest.state(db, "order-9-ack")).isEqualTo("ready");
    web.findElement(By.linkText("Open the item order-9-ack again")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    web.findElement(By.name("username")).sendKeys(ConsoleApp.OPERATOR);
    web.findElement(By.name("password")).sendKeys(ConsoleApp.OPERATOR_PASSWORD);
    web.findElement(By.cssSelector("#login button[type=submit]")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("cancel")));
    assertThat(web.getCurrentUrl()).contains("/relay/item?id=order-9-ack");
  }

  /** Opens the console, signs in as the operator with the form, and lands on the overview. */
  static void signIn(WebDriver web, String base) {
    ConsoleFlows.signIn(web, base, ConsoleApp.OPERATOR, ConsoleApp.OPERATOR_PASSWORD);
  }

  /**
   * Saves the page as {@code target/console-screenshots/<name>.png}, and with {@code
   * -Drelay.docs.update=true} also as {@code docs/images/console-<name>.png}: the pictures in
   * docs/console.md are regenerated this way.
   */
  static void screenshot(WebDriver web, String name) {
    try {
      byte[] png = ((TakesScreenshot) web).getScreenshotAs(OutputType.BYTES);
      Path dir = Path.of("target", "console-screenshots");
      Files.createDirectories(dir);
      Files.write(dir.resolve(name + ".png"), png);
      if (Boolean.getBoolean("relay.docs.update")) {
        Path docs = Path.of("..", "docs", "images");
        assertThat(docs).as("docs/images beside this module").isDirectory();
        Files.write(docs.resolve("console-" + name + ".png"), png);
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
