package dev.relay.console;

import static dev.relay.console.ConsoleTest.OPERATOR;
import static dev.relay.console.ConsoleTest.VIEWER;
import static dev.relay.console.ConsoleTest.body;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.admin.Maintenance;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The charts page: throughput, p50/p95 and failures by reason from the rollup the maintenance
 * leader folds, for every queue and kind or one pair, over 1 h, 24 h and 7 d, for viewers and
 * operators alike, with stored names shown as text.
 */
@RelayDatabaseTest
class ConsoleChartsTest {
  /** Done, failed and cancelled work over the last 50 minutes, on two queues and two kinds. */
  static void finishedWork(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, queue, state, created_at,"
            + " completed_at, claim_generation, attempts, first_attempt_at, last_error_kind)"
            + " SELECT 'w-' || g, CASE WHEN g % 2 = 0 THEN 'order_ack' ELSE '<b>kind</b>' END,"
            + " '{}', CASE WHEN g % 3 = 0 THEN 'mail' ELSE 'default' END,"
            + " CASE WHEN g % 10 = 0 THEN 'failed' WHEN g % 10 = 1 THEN 'cancelled' ELSE 'done'"
            + " END, t.at - (g % 40) * interval '150 milliseconds', t.at, 1, 1, t.at,"
            + " CASE WHEN g % 20 = 0 THEN 'http_503' WHEN g % 20 = 10 THEN '<i>x</i>' END"
            + " FROM generate_series(1, 400) g, LATERAL (SELECT now() - interval '2 minutes'"
            + " - ((g * 7) % 48) * interval '1 minute' AS at) t");
  }

  /** Folds until everything is in (a transaction of another test may hold the bound back). */
  static void fold(ConsoleApp app, TestDatabase db) {
    Maintenance m = app.context().getBean(Maintenance.class);
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              m.runOnce();
              return db.queryLong(
                      "SELECT coalesce(sum(done + failed + cancelled), 0) FROM {schema}.rollup"
                          + " WHERE span_s = 60")
                  == 400;
            });
  }

  @Test
  void viewerAndOperatorSeeThroughputPercentilesAndReasonsPerWindowAndPair(TestDatabase db)
      throws Exception {
    finishedWork(db);
    try (ConsoleApp app = ConsoleApp.start(db)) {
      fold(app, db);
      MockMvc mvc = app.mvc();
      for (RequestPostProcessor who : new RequestPostProcessor[] {VIEWER, OPERATOR}) {
        String html = body(mvc.perform(get("/relay/charts").with(who)).andExpect(status().isOk()));
        assertThat(html)
            .contains("<h1>Charts</h1>")
            .contains("every queue and kind")
            .contains("<span class=\"key-done\">done</span> 320")
            .contains("<span class=\"key-failed\">failed</span> 40")
            .contains("<span class=\"key-cancelled\">cancelled</span> 40")
            .containsPattern("<rect class=\"done\" x=\"[\\d.]+\" y=\"\\d+\"")
            .containsPattern("<rect class=\"failed\" x=\"[\\d.]+\"")
            .containsPattern("<rect class=\"cancelled\" x=\"[\\d.]+\"")
            .containsPattern("<polyline class=\"p50\" points=\"[\\d.]+,\\d+")
            .containsPattern("<polyline class=\"p95\" points=\"[\\d.]+,\\d+")
            // the stored names are text, never markup
            .contains("&lt;b&gt;kind&lt;/b&gt;")
            .contains("&lt;i&gt;x&lt;/i&gt;")
            .doesNotContain("<b>kind")
            .doesNotContain("<i>x")
            .doesNotContain("style=")
            .containsOnlyOnce("<script")
            .contains("href=\"/relay/work?state=failed&amp;errorKind=http_503\">20</a>")
            .contains("href=\"/relay/charts?window=24h\">24h</a>")
            .contains("<strong>1h</strong>");
      }

      String pair =
          body(
              mvc.perform(get("/relay/charts?window=7d&queue=mail&kind=order_ack").with(VIEWER))
                  .andExpect(status().isOk()));
      long done =
          db.queryLong(
              "SELECT count(*) FROM {schema}.work WHERE state = 'done' AND queue = 'mail'"
                  + " AND kind = 'order_ack'");
      assertThat(pair)
          .contains("queue mail, kind order_ack")
          .contains("<span class=\"key-done\">done</span> " + done + ",")
          .contains("<strong>7d</strong>")
          .contains("<tr class=\"current\">")
          .contains("href=\"/relay/charts?window=7d\">every queue and kind</a>");
      String day = body(mvc.perform(get("/relay/charts?window=24h&kind=order_ack").with(VIEWER)));
      assertThat(day).contains("kind order_ack, every queue").contains("<strong>24h</strong>");

      String bad =
          body(
              mvc.perform(get("/relay/charts?window=2w").with(VIEWER))
                  .andExpect(status().isBadRequest()));
      assertThat(bad).contains("window must be 1h, 24h or 7d, was 2w");
    }
  }

  /**
   * The overview's p50 / p95 of sub-second work in milliseconds, as the charts page and {@code
   * relay status} show them (before: rounded down to whole seconds, "0 s / 0 s").
   */
  @Test
  void theOverviewShowsSubSecondLatenciesInMilliseconds(TestDatabase db) throws Exception {
    // 30 done items, created a minute ago, each finished 40 to 69 ms after it was created.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
            + " claim_generation, attempts, first_attempt_at, outcome)"
            + " SELECT 'quick-' || g, 'order_ack', '{}', 'done', t.at,"
            + " t.at + (39 + g) * interval '1 millisecond', 1, 1, t.at, 'delivered'"
            + " FROM generate_series(1, 30) g, LATERAL (SELECT now() - interval '1 minute' AS at) t");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      String html = body(app.mvc().perform(get("/relay").with(VIEWER)).andExpect(status().isOk()));
      Matcher cell = Pattern.compile("<td>(\\d+) ms / (\\d+) ms</td>").matcher(html);
      assertThat(cell.find()).as(html).isTrue();
      // Within the rollup histogram's error of the true 54 ms and 68 ms.
      assertThat(Long.parseLong(cell.group(1))).isBetween(40L, 70L);
      assertThat(Long.parseLong(cell.group(2))).isBetween(55L, 85L);
      assertThat(html).doesNotContain("0 s / 0 s");
    }
  }

  @Test
  void beforeAnyFoldThePageSaysSo(TestDatabase db) throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db, "relay.maintenance.enabled=false")) {
      String html =
          body(app.mvc().perform(get("/relay/charts").with(VIEWER)).andExpect(status().isOk()));
      assertThat(html)
          .contains("No work failed in this window.")
          .contains(
              "No work finished in this window (or the maintenance leader has not folded it yet).");
    }
  }
}
