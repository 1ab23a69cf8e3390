package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A bulk redrive of 1,000 failed items from a filtered work list, in a real headless Chromium: the
 * preview counts what would change and what would be refused (a running item, one past its horizon,
 * failed work of another error kind left out by the filter), the operator confirms with a reason,
 * and the progress page, reloaded, follows the stored action to done. The database is checked:
 * 1,000 items ready, 1,000 audit rows with the operator and the reason, the rest untouched.
 */
@RelayDatabaseTest
class BulkBrowserTest {
  @Test
  void operatorRedrivesAThousandFailedItemsFromAFilteredList(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, max_attempts, claim_generation, last_error_kind,"
            + " last_error) SELECT 'mail-' || g, 'mail', '{}', 'failed',"
            + " now() - interval '1 hour' + g * interval '1 millisecond', now(),"
            + " CASE WHEN g = 1001 THEN now() - interval '3650 days' ELSE now() END, 3, 3, 3,"
            + " CASE WHEN g > 1001 THEN 'http_400' ELSE 'http_503' END, 'unavailable'"
            + " FROM generate_series(1, 1010) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, last_error_kind)"
            + " VALUES ('mail-running', 'mail', '{}', 'http_503');"
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'w1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1,"
            + " first_attempt_at = now() WHERE work_id = 'mail-running'");
    try (ConsoleApp app = ConsoleApp.start(db, "relay.console.refresh=1s");
        Chromium chromium = Chromium.start()) {
      WebDriver web = chromium.web();
      WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(60));
      String base = "http://127.0.0.1:" + app.port();
      ConsoleBrowserTest.signIn(web, base);

      // The filtered list: every state, kind mail, error kind http_503.
      web.get(base + "/relay/work?kind=mail&errorKind=http_503");
      wait.until(ExpectedConditions.titleContains("Work"));
      web.findElement(By.cssSelector("form.bulk button[value=redrive]")).click();

      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("bulk-confirm")));
      String preview = web.findElement(By.cssSelector("table.bulk-counts")).getText();
      assertThat(preview)
          .contains("Matching now 1002")
          .contains("would be redriven 1000")
          .contains("refused: running (a redrive never touches running work) 1")
          .contains("refused: past the kind's deduplication horizon")
          .containsPattern("deduplication horizon \\(redrive one by one to override\\) 1");
      assertThat(web.findElement(By.cssSelector(".bulk-filter")).getText())
          .isEqualTo("kind = mail, errorKind = http_503");
      // Nothing written by the preview.
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox WHERE state = 'ready'"))
          .isZero();
      ConsoleBrowserTest.screenshot(web, "bulk-preview");

      web.findElement(By.cssSelector("#bulk-confirm textarea[name=reason]"))
          .sendKeys("SMTP relay back, INC-77");
      web.findElement(By.cssSelector("#bulk-confirm button[type=submit]")).click();
      wait.until(ExpectedConditions.presenceOfElementLocated(By.id("bulk-state")));
      // The progress page is the stored action: a reload shows it, and it updates itself to done.
      web.navigate().refresh();
      wait.until(ExpectedConditions.textToBe(By.id("bulk-state"), "done"));
      String progress = web.findElement(By.cssSelector("table.bulk-counts")).getText();
      assertThat(progress).contains("Handled so far 1002").contains("redriven 1000");
      ConsoleBrowserTest.screenshot(web, "bulk-progress");

      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.outbox WHERE state = 'ready' AND attempts = 0"))
          .isEqualTo(1000);
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.redrive_audit WHERE actor = 'olga'"
                      + " AND reason = 'SMTP relay back, INC-77' AND from_state = 'failed'"))
          .isEqualTo(1000);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox WHERE state = 'failed'"))
          .isEqualTo(10); // past the horizon, and the other error kind
      assertThat(ConsoleTest.state(db, "mail-running")).isEqualTo("running");
      assertThat(
              db.queryString(
                  "SELECT state || ' ' || handled || ' ' || changed || ' ' || refused_running"
                      + " || ' ' || refused_horizon || ' ' || batches FROM {schema}.bulk_operation"))
          .isEqualTo("done 1002 1000 1 1 6");

      web.findElement(By.linkText("All bulk actions")).click();
      wait.until(ExpectedConditions.titleContains("Bulk actions"));
      assertThat(web.findElement(By.cssSelector("table.bulks")).getText())
          .contains("redrive")
          .contains("SMTP relay back, INC-77")
          .contains("done");
    }
  }
}
