package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.FluentWait;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console's browser flows, each in a browser already signed in as an operator: the overview
 * updating by itself, payload search, the limits and schedules pages, a bulk redrive of 1,000
 * failed items and a bulk purge from a filtered list, each with its preview. Shared by the
 * console's own browser tests (in an application of their own, {@link ConsoleApp}) and by {@code
 * relay serve}'s (through this module's test jar), so both run the same steps.
 *
 * <p>Each flow inserts the rows it needs, under kinds of its own that no worker runs (so a server's
 * own workers leave them alone), and checks the database as well as the page. Nothing waits for
 * time to pass: pages are awaited on their content.
 */
public final class ConsoleFlows {
  private ConsoleFlows() {}

  /**
   * Opens the console, signs in with the form, and lands on the overview. The sign-in page offers
   * none of the pages a signed-out visitor cannot open: its header names the product only.
   */
  public static void signIn(WebDriver web, String base, String user, String password) {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("login")));
    assertThat(web.findElement(By.tagName("header")).getText()).isEqualTo("Relay");
    assertThat(web.findElements(By.cssSelector("header a"))).isEmpty();
    web.findElement(By.name("username")).sendKeys(user);
    web.findElement(By.name("password")).sendKeys(password);
    web.findElement(By.cssSelector("#login button[type=submit]")).click();
    wait.until(ExpectedConditions.titleContains("Overview"));
  }

  /**
   * Work that appears and completes while the overview is open shows there without a reload: the
   * console's script swaps in the fresh counts (the server must refresh often: {@code
   * relay.console.refresh=1s}). A mark left on the window proves the page was not loaded again.
   */
  public static void overviewUpdatesItself(WebDriver web, String base, TestDatabase db)
      throws Exception {
    web.get(base + "/relay");
    new WebDriverWait(web, Duration.ofSeconds(30))
        .until(ExpectedConditions.titleContains("Overview"));
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
   * Search payloads by a path and a value, narrowed by kind: exactly the matching item is found, a
   * {@code <script>} in the value stays text, and the page says what it searched. The results page
   * is pictured as {@code search}.
   */
  public static void searchPayload(
      WebDriver web, String base, TestDatabase db, Consumer<String> screenshot) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES"
            + " ('receipt-42', 'search_receipt',"
            + " '{\"customer\": {\"id\": 42}, \"note\": \"<script>alert(1)</script>\"}'),"
            + " ('receipt-43', 'search_receipt', '{\"customer\": {\"id\": 43}, \"note\": \"x\"}'),"
            + " ('other-42', 'search_other', '{\"note\": \"<script>alert(1)</script>\"}')");
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay/search");
    wait.until(ExpectedConditions.titleContains("Search payloads"));
    assertThat(web.findElement(By.cssSelector("p.search-bound")).getText())
        .contains("never reads the whole table");
    web.findElement(By.name("path")).sendKeys("note");
    web.findElement(By.name("value")).sendKeys("<script>alert(1)</script>");
    web.findElement(By.name("kind")).sendKeys("search_receipt");
    web.findElement(By.cssSelector("form.search button[type=submit]")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("p.searched")));
    assertThat(web.findElements(By.cssSelector("table.search-results a")))
        .extracting(WebElement::getText)
        .containsExactly("receipt-42");
    assertThat(web.findElement(By.cssSelector("p.searched")).getText())
        .contains("{\"note\":\"<script>alert(1)</script>\"}");
    assertThatThrownBy(() -> web.switchTo().alert()).isInstanceOf(NoAlertPresentException.class);
    screenshot.accept("search");
  }

  /**
   * The limits page shows a limited kind's running work against its limits and its busiest groups;
   * the schedules page shows each schedule's last and next slot, missed-slot policy and an overdue
   * one. Pictured as {@code limits} and {@code schedules}.
   */
  public static void limitsAndSchedules(
      WebDriver web, String base, TestDatabase db, Consumer<String> screenshot) throws Exception {
    limits(web, base, db, screenshot);
    db.execute(
        "INSERT INTO {schema}.schedule_state (name, kind, definition, last_slot, next_slot,"
            + " decided_at, decided_by, enqueued, skipped) VALUES"
            + " ('nightly-report', 'report', 'cron \"0 2 * * *\" UTC missed=latest',"
            + " now() - interval '19 hours', now() + interval '5 hours', now() - interval '19 hours',"
            + " 'scheduler-1', 30, 0),"
            + " ('sms-digest', 'sms', 'every PT15M missed=each(PT1H)', now() - interval '1 hour',"
            + " now() - interval '45 minutes', now() - interval '1 hour', 'scheduler-2', 96, 3)");
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.findElement(By.linkText("Schedules")).click();
    wait.until(ExpectedConditions.titleContains("Schedules"));
    assertThat(web.findElement(By.cssSelector("table.schedules")).getText())
        .contains("nightly-report")
        .contains("sms-digest")
        .contains("every 15 min 0 s")
        .containsPattern("overdue by \\d+ min");
    screenshot.accept("schedules");
  }

  /**
   * The limits page shows a limited kind's running work against its limits and its busiest groups
   * (pictured as {@code limits}); for an application without relay-schedule, whose console has no
   * schedules page.
   */
  public static void limits(
      WebDriver web, String base, TestDatabase db, Consumer<String> screenshot) throws Exception {
    db.execute(
        "INSERT INTO {schema}.limiter (kind, max_running, max_running_per_group, rate_limit,"
            + " rate_interval) VALUES ('sms', 4, 2, 60, interval '1 minute');"
            // inserted ready, then claimed (only a local hand-off inserts a claim)
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, group_key)"
            + " SELECT 'sms-run-' || g, 'sms', '{}', 'tenant-' || (g % 2)"
            + " FROM generate_series(1, 3) g;"
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'worker-1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1"
            + " WHERE work_id LIKE 'sms-run-%'");
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay");
    wait.until(ExpectedConditions.titleContains("Overview"));
    web.findElement(By.linkText("Limits")).click();
    wait.until(ExpectedConditions.titleContains("Limits"));
    assertThat(web.findElement(By.cssSelector("table.limits")).getText())
        .contains("sms")
        .contains("3 of 4 running")
        .contains("at most 2 per group; busiest: tenant-1 2 (at the limit), tenant-0 1");
    screenshot.accept("limits");
  }

  /**
   * A bulk redrive of 1,000 failed items from a filtered work list: the preview counts what would
   * change and what would be refused (a running item, one past its horizon; failed work of another
   * error kind is left out by the filter) and writes nothing; the operator confirms with a reason,
   * and the progress page, reloaded, follows the stored action to done. The database is checked:
   * 1,000 items ready, 1,000 audit rows with the operator and the reason, the rest untouched.
   * Pictured as {@code bulk-preview} and {@code bulk-progress}.
   *
   * @param user the signed-in operator's name
   */
  public static void bulkRedrive(
      WebDriver web, String base, TestDatabase db, String user, Consumer<String> screenshot)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, max_attempts, claim_generation, last_error_kind,"
            + " last_error) SELECT 'newsletter-' || g, 'newsletter', '{}', 'failed',"
            + " now() - interval '1 hour' + g * interval '1 millisecond', now(),"
            + " CASE WHEN g = 1001 THEN now() - interval '3650 days' ELSE now() END, 3, 3, 3,"
            + " CASE WHEN g > 1001 THEN 'http_400' ELSE 'http_503' END, 'unavailable'"
            + " FROM generate_series(1, 1010) g");
    running(db, "newsletter-running", "newsletter", "http_503");
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(60));

    // The filtered list: every state, kind newsletter, error kind http_503.
    web.get(base + "/relay/work?kind=newsletter&errorKind=http_503");
    wait.until(ExpectedConditions.titleContains("Work"));
    web.findElement(By.cssSelector("form.bulk button[value=redrive]")).click();

    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("bulk-confirm")));
    String preview = web.findElement(By.cssSelector("table.bulk-counts")).getText();
    assertThat(preview)
        .contains("Matching now 1002")
        .contains("would be redriven 1000")
        .contains("refused: running (a redrive never touches running work) 1")
        .containsPattern("deduplication horizon \\(redrive one by one to override\\) 1");
    assertThat(web.findElement(By.cssSelector(".bulk-filter")).getText())
        .isEqualTo("kind = newsletter, errorKind = http_503");
    // Nothing written by the preview.
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work WHERE kind = 'newsletter'"
                    + " AND state = 'ready'"))
        .isZero();
    screenshot.accept("bulk-preview");

    long id = confirmAndFollow(web, "SMTP relay back, INC-77");
    assertThat(web.findElement(By.cssSelector("table.bulk-counts")).getText())
        .contains("Handled so far 1002")
        .contains("redriven 1000");
    screenshot.accept("bulk-progress");

    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work WHERE kind = 'newsletter'"
                    + " AND state = 'ready' AND attempts = 0"))
        .isEqualTo(1000);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.redrive_audit WHERE actor = '"
                    + user
                    + "' AND reason = 'SMTP relay back, INC-77' AND from_state = 'failed'"))
        .isEqualTo(1000);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work WHERE kind = 'newsletter'"
                    + " AND state = 'failed'"))
        .isEqualTo(10); // past the horizon, and the other error kind
    assertThat(
            db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'newsletter-running'"))
        .isEqualTo("running");
    assertThat(
            db.queryString(
                "SELECT state || ' ' || handled || ' ' || changed || ' ' || refused_running"
                    + " || ' ' || refused_horizon || ' ' || batches FROM {schema}.bulk_operation"
                    + " WHERE id = "
                    + id))
        .isEqualTo("done 1002 1000 1 1 6");

    web.findElement(By.linkText("All bulk actions")).click();
    wait.until(ExpectedConditions.titleContains("Bulk actions"));
    assertThat(web.findElement(By.cssSelector("table.bulks")).getText())
        .contains("redrive")
        .contains("SMTP relay back, INC-77")
        .contains("done");
  }

  /**
   * A bulk purge from a filtered work list: the preview counts what would be purged and what would
   * be refused (running work, failed work, and work that ended within its kind's deduplication
   * horizon) and writes nothing; the operator confirms with a reason, and the progress page,
   * reloaded, follows the stored action to done. The database is checked: 300 rows gone, each with
   * a tombstone and an audit row with the operator and the reason, the refused rows untouched.
   * Pictured as {@code bulk-purge-preview} and {@code bulk-purge}.
   *
   * @param user the signed-in operator's name
   */
  public static void bulkPurge(
      WebDriver web, String base, TestDatabase db, String user, Consumer<String> screenshot)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " first_attempt_at, attempts, claim_generation, outcome)"
            + " SELECT 'load-test-' || g, 'load_test', jsonb_build_object('n', g), 'done',"
            + " now() - interval '3 days' + g * interval '1 millisecond',"
            + " CASE WHEN g > 300 THEN now() ELSE now() - interval '2 days' END,"
            + " now() - interval '3 days', 1, 1, 'delivered' FROM generate_series(1, 302) g;"
            + "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, attempts, max_attempts, claim_generation, last_error_kind,"
            + " last_error) VALUES ('load-test-failed', 'load_test', '{}', 'failed',"
            + " now() - interval '2 days', now() - interval '3 days', 3, 3, 3, 'http_503', 'x')");
    running(db, "load-test-running", "load_test", null);
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(60));

    web.get(base + "/relay/work?kind=load_test");
    wait.until(ExpectedConditions.titleContains("Work"));
    web.findElement(By.cssSelector("form.bulk button[value=purge]")).click();

    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("bulk-confirm")));
    assertThat(web.findElement(By.cssSelector("table.bulk-counts")).getText())
        .contains("Matching now 304")
        .contains("would be purged (each leaves a tombstone) 300")
        .contains("refused: running (a purge never touches running work) 1")
        .containsPattern("ended within the kind's deduplication horizon [^\\n]*\\) 2")
        .containsPattern("refused: not done or cancelled [^\\n]*\\) 1");
    assertThat(web.findElement(By.tagName("main")).getText()).contains("It cannot be undone.");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id LIKE 'load-test-%'"))
        .isEqualTo(304);
    screenshot.accept("bulk-purge-preview");

    long id = confirmAndFollow(web, "load test data, TASK-12");
    assertThat(web.findElement(By.cssSelector("table.bulk-counts")).getText())
        .contains("Handled so far 304")
        .contains("purged (each leaves a tombstone) 300");
    screenshot.accept("bulk-purge");

    assertThat(
            db.queryString(
                "SELECT string_agg(work_id || ' ' || state, ', ' ORDER BY work_id)"
                    + " FROM {schema}.work WHERE kind = 'load_test'"))
        .isEqualTo(
            "load-test-301 done, load-test-302 done, load-test-failed failed,"
                + " load-test-running running");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.tombstone WHERE work_id LIKE 'load-test-%'"
                    + " AND final_state = 'done' AND last_generation = 1"))
        .isEqualTo(300);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.purge_item_audit WHERE actor = '"
                    + user
                    + "' AND reason = 'load test data, TASK-12' AND bulk_id = "
                    + id))
        .isEqualTo(300);
  }

  /** Inserts an item running under a live lease (inserted ready, then claimed, as a claim does). */
  private static void running(TestDatabase db, String workId, String kind, String errorKind)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, last_error_kind) VALUES ('"
            + workId
            + "', '"
            + kind
            + "', '{}', "
            + (errorKind == null ? "NULL" : "'" + errorKind + "'")
            + ");"
            + "UPDATE {schema}.outbox SET state = 'running', claimed_by = 'w1',"
            + " lease_until = now() + interval '1 hour', claim_generation = 1, attempts = 1,"
            + " first_attempt_at = now() WHERE work_id = '"
            + workId
            + "'");
  }

  /**
   * Confirms the preview with {@code reason}, reloads the progress page (it is read from the stored
   * action, so the reload shows it) and waits until it says done by itself; returns its ID.
   */
  private static long confirmAndFollow(WebDriver web, String reason) {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(60));
    web.findElement(By.cssSelector("#bulk-confirm textarea[name=reason]")).sendKeys(reason);
    web.findElement(By.cssSelector("#bulk-confirm button[type=submit]")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("bulk-state")));
    web.navigate().refresh();
    wait.until(ExpectedConditions.textToBe(By.id("bulk-state"), "done"));
    String url = web.getCurrentUrl();
    return Long.parseLong(url.substring(url.indexOf("id=") + 3));
  }
}
