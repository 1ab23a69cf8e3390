package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Outcome;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.FluentWait;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}):
 * sign in with the form, open the overview, follow the failures of one reason to the work list, see
 * the charts of the last hour, open an item, redrive it with a reason, and see the new state and
 * the audit line with the user's name. Without Chromium the test fails, saying how to install it:
 * it is never skipped.
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
    // A limited kind with live claims, and two schedules, one of them overdue.
    db.execute(
        "INSERT INTO {schema}.limiter (kind, max_running, max_running_per_group, rate_limit,"
            + " rate_interval) VALUES ('mail', 4, 2, 60, interval '1 minute');"
            // inserted ready, then claimed (only a local hand-off inserts a claim)
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, group_key)"
            + " SELECT 'mail-run-' || g, 'mail', '{}', 'tenant-' || (g % 2)"
            + " FROM generate_series(1, 3) g;"
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'worker-1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1"
            + " WHERE work_id LIKE 'mail-run-%';"
            + "INSERT INTO {schema}.schedule_state (name, kind, definition, last_slot, next_slot,"
            + " decided_at, decided_by, enqueued, skipped) VALUES"
            + " ('nightly-report', 'report', 'cron \"0 2 * * *\" UTC missed=latest',"
            + " now() - interval '19 hours', now() + interval '5 hours', now() - interval '19 hours',"
            + " 'scheduler-1', 30, 0),"
            + " ('mail-digest', 'mail', 'every PT15M missed=each(PT1H)', now() - interval '1 hour',"
            + " now() - interval '45 minutes', now() - interval '1 hour', 'scheduler-2', 96, 3)");
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
      overviewUpdatesItself(web, db);

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
      web.findElement(By.linkText("Limits")).click();
      wait.until(ExpectedConditions.titleContains("Limits"));
      assertThat(web.findElement(By.cssSelector("table.limits")).getText())
          .contains("3 of 4 running")
          .contains("at most 2 per group; busiest: tenant-1 2 (at the limit), tenant-0 1");
      screenshot(web, "limits");
      web.findElement(By.linkText("Schedules")).click();
      wait.until(ExpectedConditions.titleContains("Schedules"));
      assertThat(web.findElement(By.cssSelector("table.schedules")).getText())
          .contains("nightly-report")
          .contains("every 15 min 0 s")
          .containsPattern("overdue by \\d+ min");
      screenshot(web, "schedules");
      web.findElement(By.linkText("Search")).click();
      wait.until(ExpectedConditions.titleContains("Search payloads"));
      web.findElement(By.name("path")).sendKeys("note");
      web.findElement(By.name("value")).sendKeys("<script>alert(1)</script>");
      web.findElement(By.cssSelector("form.search button[type=submit]")).click();
      wait.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("p.searched")));
      assertThat(web.findElements(By.cssSelector("table.search-results a")))
          .extracting(WebElement::getText)
          .containsExactly("order-9-ack");
      assertThat(web.findElement(By.cssSelector("p.searched")).getText())
          .contains("{\"note\":\"<script>alert(1)</script>\"}");
      assertThatThrownBy(() -> web.switchTo().alert()).isInstanceOf(NoAlertPresentException.class);
      screenshot(web, "search");
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

      // Pause a kind from the console, see it held while another kind is worked, resume it.
      ManualWorker worker =
          ManualWorker.builder(db.dataSource())
              .schema(db.schema())
              .handle("receipt", claim -> Outcome.done())
              .handle("invoice", claim -> Outcome.done())
              .build();
      ConsolePauseFlow.pauseAndResume(
          web,
          base,
          db,
          ConsoleApp.OPERATOR,
          "receipt",
          "invoice",
          worker::runNext,
          name -> screenshot(web, name));

      web.findElement(By.cssSelector("form.logout button")).click();
      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
      web.get(base + "/relay");
      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    }
  }

  /** Opens the console, signs in as the operator with the form, and lands on the overview. */
  static void signIn(WebDriver web, String base) {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    web.findElement(By.name("username")).sendKeys(ConsoleApp.OPERATOR);
    web.findElement(By.name("password")).sendKeys(ConsoleApp.OPERATOR_PASSWORD);
    web.findElement(By.cssSelector("#login button[type=submit]")).click();
    wait.until(ExpectedConditions.titleContains("Overview"));
  }

  /**
   * Work that appears and completes while the overview is open shows there without a reload: the
   * console's script swaps in the fresh counts. A mark left on the window proves the page was not
   * loaded again.
   */
  private static void overviewUpdatesItself(WebDriver web, TestDatabase db) throws Exception {
    ((JavascriptExecutor) web).executeScript("window.relayNotReloaded = true;");
    // Not yet eligible, so no worker claims it: the overview shows it ready.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)"
            + " VALUES ('live-1', 'live_check', '{}', now() + interval '1 day')");
    By row = By.xpath("//main//tr[td[2][text()='live_check']]");
    // The row is swapped while it is read: read it again then.
    FluentWait<WebDriver> live =
        new WebDriverWait(web, Duration.ofSeconds(30))
            .ignoring(StaleElementReferenceException.class);
    live.until(w -> cell(w, row, 2).equals("1"));
    db.execute(
        "UPDATE {schema}.outbox SET state = 'done', completed_at = now(), attempts = 1,"
            + " claim_generation = 1, first_attempt_at = now() WHERE work_id = 'live-1'");
    live.until(w -> cell(w, row, 12).equals("1") && cell(w, row, 2).equals("0"));
    assertThat(((JavascriptExecutor) web).executeScript("return window.relayNotReloaded === true;"))
        .isEqualTo(true);
    assertThat(web.findElement(By.id("live-status")).getText()).contains("Live");
  }

  /** The text of cell {@code i} (from 0) of the first row that {@code row} finds, or "". */
  private static String cell(WebDriver web, By row, int i) {
    List<WebElement> rows = web.findElements(row);
    return rows.isEmpty() ? "" : rows.get(0).findElements(By.tagName("td")).get(i).getText();
  }

  /**
   * Saves the page as {@code target/console-screenshots/<name>.png}: the pictures in
   * docs/console.md come from here.
   */
  static void screenshot(WebDriver web, String name) {
    try {
      Path dir = Path.of("target", "console-screenshots");
      Files.createDirectories(dir);
      Files.write(
          dir.resolve(name + ".png"), ((TakesScreenshot) web).getScreenshotAs(OutputType.BYTES));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
