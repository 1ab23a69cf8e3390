package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import java.sql.Connection;
import java.time.Duration;
import java.util.function.Consumer;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Pause a kind from the console, see that its work is not claimed while another kind's is, resume
 * it, see it claimed, and read both actions in the pause audit with the user's name and reasons. In
 * a browser already signed in as an operator; shared by the console's own browser test and by
 * {@code relay serve}'s (through this module's test jar).
 *
 * <p>Nothing waits for time to pass: "not claimed" is read from the database after the workers have
 * claimed and finished the other kind's work, enqueued after the paused kind's.
 */
public final class ConsolePauseFlow {
  private ConsolePauseFlow() {}

  /**
   * Runs the flow.
   *
   * @param web a browser signed in as an operator named {@code user}
   * @param base the server's address ({@code http://127.0.0.1:PORT})
   * @param held the kind to pause (its workers run it to done)
   * @param control another kind its workers run to done
   * @param work makes the workers take the next item of a kind, where no worker runs by itself (a
   *     manual worker); a no-op under running workers
   * @param screenshot takes a picture of the page under a name (the pauses page while paused)
   */
  public static void pauseAndResume(
      WebDriver web,
      String base,
      TestDatabase db,
      String user,
      String held,
      String control,
      Consumer<String> work,
      Consumer<String> screenshot)
      throws Exception {
    WebDriverWait wait = new WebDriverWait(web, Duration.ofSeconds(30));
    web.get(base + "/relay/pauses");
    wait.until(ExpectedConditions.presenceOfElementLocated(By.id("pause")));
    web.findElement(By.cssSelector("#pause input[name=kind]")).sendKeys(held);
    web.findElement(By.cssSelector("#pause textarea[name=reason]"))
        .sendKeys("receiver down, INC-31");
    web.findElement(By.cssSelector("#pause button[type=submit]")).click();
    wait.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("p.done")));
    assertThat(web.findElement(By.cssSelector("table.pauses")).getText())
        .contains("kind '" + held + "'")
        .contains("receiver down, INC-31")
        .contains(user);

    // Work of the paused kind first, then the other kind's: the workers finish the second while
    // the first stays ready, never attempted.
    enqueue(db, Work.of("paused-1", held, "{}"));
    enqueue(db, Work.of("control-1", control, "{}"));
    work.accept(held);
    work.accept(control);
    await().atMost(Duration.ofSeconds(30)).until(() -> "done".equals(state(db, "control-1")));
    assertThat(state(db, "paused-1")).isEqualTo("ready");
    assertThat(db.queryLong("SELECT attempts FROM {schema}.work WHERE work_id = 'paused-1'"))
        .isZero();
    screenshot.accept("pauses");

    web.findElement(By.cssSelector("form.resume textarea[name=reason]"))
        .sendKeys("receiver back, INC-31");
    web.findElement(By.cssSelector("form.resume button[type=submit]")).click();
    wait.until(
        ExpectedConditions.textToBePresentInElementLocated(By.cssSelector("p.done"), "Resumed"));
    assertThat(web.findElement(By.tagName("main")).getText()).contains("Nothing is paused.");
    work.accept(held);
    await().atMost(Duration.ofSeconds(30)).until(() -> "done".equals(state(db, "paused-1")));

    String audit = web.findElement(By.cssSelector("table.pause-audit")).getText();
    assertThat(audit)
        .contains("resumed")
        .contains("receiver back, INC-31")
        .contains("paused")
        .contains("receiver down, INC-31")
        .contains(user);
    assertThat(
            db.queryString(
                "SELECT string_agg(action || ' ' || kind || ' ' || actor, ', ' ORDER BY id)"
                    + " FROM {schema}.pause_audit"))
        .isEqualTo("pause " + held + " " + user + ", resume " + held + " " + user);
  }

  /**
   * Runs the flow with kinds {@code receipt} (paused) and {@code invoice}, which a manual worker of
   * the test runs to done: for an application whose own workers run neither.
   */
  public static void pauseAndResumeWithManualWorker(
      WebDriver web, String base, TestDatabase db, String user, Consumer<String> screenshot)
      throws Exception {
    ManualWorker worker =
        ManualWorker.builder(db.dataSource())
            .schema(db.schema())
            .handle("receipt", claim -> Outcome.done())
            .handle("invoice", claim -> Outcome.done())
            .build();
    pauseAndResume(web, base, db, user, "receipt", "invoice", worker::runNext, screenshot);
  }

  private static String state(TestDatabase db, String workId) throws Exception {
    return db.queryString("SELECT state FROM {schema}.work WHERE work_id = '" + workId + "'");
  }

  private static void enqueue(TestDatabase db, Work w) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox.builder().schema(db.schema()).build().enqueue(c, w);
      c.commit();
    }
  }
}
