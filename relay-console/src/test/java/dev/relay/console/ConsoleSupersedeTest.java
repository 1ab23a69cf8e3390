package dev.relay.console;

import static dev.relay.console.ConsoleTest.body;
import static dev.relay.console.ConsoleTest.failed;
import static dev.relay.console.ConsoleTest.operatorPost;
import static dev.relay.console.ConsoleTest.state;
import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

/** The console's supersede action on work that already has a replacement. */
@RelayDatabaseTest
class ConsoleSupersedeTest {
  private static MockHttpServletRequestBuilder supersede(String newId) {
    return operatorPost(
        "/relay/item/supersede",
        "id",
        "order-9-ack",
        "newId",
        newId,
        "payload",
        "{\"amount\": 12}",
        "reason",
        "amount corrected");
  }

  @Test
  void aSecondSupersedeShowsTheRefusalNamingTheReplacementAndChangesNothing(TestDatabase db)
      throws Exception {
    failed(db, "order-9-ack", "{\"amount\": 10}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      mvc.perform(supersede("order-9-ack-v2")).andExpect(status().isSeeOther());

      String refused =
          body(mvc.perform(supersede("order-9-ack-v3")).andExpect(status().isConflict()));

      assertThat(refused)
          .contains("Supersede refused; nothing changed")
          .contains(
              "cannot supersede &#39;order-9-ack&#39;: it is already superseded by"
                  + " &#39;order-9-ack-v2&#39;; to correct it again, supersede"
                  + " &#39;order-9-ack-v2&#39;");
      assertThat(state(db, "order-9-ack-v2")).isEqualTo("ready");
      assertThat(
              db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id = 'order-9-ack-v3'"))
          .isZero();
    }
  }
}
