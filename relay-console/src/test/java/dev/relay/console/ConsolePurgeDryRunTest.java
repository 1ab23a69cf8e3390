package dev.relay.console;

import static dev.relay.console.ConsoleTest.OPERATOR;
import static dev.relay.console.ConsoleTest.body;
import static dev.relay.console.ConsoleTest.operatorPost;
import static dev.relay.console.ConsoleTest.state;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.admin.Maintenance;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;

/**
 * The purge dry run counts with the purge policy of the application's maintenance loop ({@code
 * relay.maintenance.*}, as {@code relay serve} and the starter configure it), so its count is what
 * maintenance then deletes, and the page says which policy it counted with; an application running
 * no loop gets the default policy, and the page says that too.
 */
@RelayDatabaseTest
class ConsolePurgeDryRunTest {
  private static final String COUNTED_ONE = "<dt>Done and cancelled work</dt><dd>1</dd>";
  private static final String COUNTED_NONE = "<dt>Done and cancelled work</dt><dd>0</dd>";

  /** Done work that ended three days ago: past a one-day retention, within the default 7 days. */
  private static void endedThreeDaysAgo(TestDatabase db, String workId) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " first_attempt_at, claim_generation, attempts, outcome) VALUES ('"
            + workId
            + "', 'order_ack', '{}', 'done', now() - interval '3 days',"
            + " now() - interval '3 days', 1, 1, 'delivered')");
  }

  @Test
  void countsWithTheRetentionTheMaintenanceLoopIsConfiguredWith(TestDatabase db) throws Exception {
    try (ConsoleApp app =
        ConsoleApp.start(
            db, "relay.maintenance.work-retention=1d", "relay.maintenance.interval=1h")) {
      // The loop's first run, at start, is over before the work exists; the next is an hour away.
      Maintenance maintenance = app.context().getBean(Maintenance.class);
      await().until(maintenance::isLeader);
      endedThreeDaysAgo(db, "order-1-ack");
      MockMvc mvc = app.mvc();

      assertThat(body(mvc.perform(get("/relay/purge").with(OPERATOR)).andExpect(status().isOk())))
          .contains(
              "Counts what would be deleted now under the purge policy of this application&#39;s"
                  + " maintenance loop (relay.maintenance.*): done and cancelled work kept 1 d 0 h"
                  + " after it ended")
          .doesNotContain("default purge policy");
      assertThat(
              body(
                  mvc.perform(operatorPost("/relay/purge", "reason", "sizing"))
                      .andExpect(status().isOk())))
          .contains("Nothing was deleted. Eligible now under the purge policy of this application")
          .contains("kept 1 d 0 h after it ended")
          .contains(COUNTED_ONE);
      assertThat(state(db, "order-1-ack")).isEqualTo("done");

      // What the loop then deletes is what the dry run counted.
      assertThat(maintenance.runOnce().purge().work()).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }
  }

  @Test
  void withoutAMaintenanceLoopCountsWithTheDefaultPolicyAndSaysSo(TestDatabase db)
      throws Exception {
    endedThreeDaysAgo(db, "order-2-ack");
    try (ConsoleApp app =
        ConsoleApp.start(
            db, "relay.maintenance.enabled=false", "relay.maintenance.work-retention=1d")) {
      MockMvc mvc = app.mvc();
      assertThat(body(mvc.perform(get("/relay/purge").with(OPERATOR)).andExpect(status().isOk())))
          .contains(
              "Counts what would be deleted now under the default purge policy: done and"
                  + " cancelled work kept 7 d 0 h after it ended")
          .contains(
              "This application runs no maintenance loop (relay.maintenance.enabled=false), so"
                  + " the retention of the process that runs one may differ.");
      assertThat(
              body(
                  mvc.perform(operatorPost("/relay/purge", "reason", "sizing"))
                      .andExpect(status().isOk())))
          .contains("Eligible now under the default purge policy")
          .contains("This application runs no maintenance loop")
          .contains(COUNTED_NONE);
      assertThat(state(db, "order-2-ack")).isEqualTo("done");
    }
  }
}
