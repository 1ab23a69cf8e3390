package dev.relay.console;

import static dev.relay.console.ConsoleTest.INTERNAL_NAME;
import static dev.relay.console.ConsoleTest.VIEWER;
import static dev.relay.console.ConsoleTest.body;
import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;

/**
 * The schedules and limits pages, an item's dependencies in both directions, and the live parts
 * every refreshing page marks for the console's script.
 */
@RelayDatabaseTest
class ConsolePagesTest {

  @Test
  void schedulesLimitsAndDependenciesInWords(TestDatabase db) throws Exception {
    db.execute(
        """
        INSERT INTO {schema}.schedule_state (name, kind, definition, last_slot, next_slot,
                                             decided_at, decided_by, enqueued, skipped, conflicts)
        VALUES ('nightly-report', 'report', 'cron "0 2 * * *" UTC missed=each(PT6H)',
                now() - interval '1 day', now() - interval '2 hours', now() - interval '1 day',
                'scheduler-1', 30, 2, 0),
               ('heartbeat', '<b>ping</b>', 'every PT30S missed=skip', now(),
                now() + interval '30 seconds', now(), 'scheduler-2', 500, 7, 1);
        INSERT INTO {schema}.limiter (kind, max_running, max_running_per_group, rate_limit,
                                      rate_interval)
        VALUES ('mail', 2, 1, 100, interval '1 minute');
        -- inserted ready, then claimed (only a local hand-off inserts a claim)
        INSERT INTO {schema}.outbox (work_id, kind, payload, group_key)
        VALUES ('mail-1', 'mail', '{}', 'tenant-a'), ('mail-2', 'mail', '{}', 'tenant-b');
        UPDATE {schema}.outbox
           SET state = 'running', claimed_by = 'w1', lease_until = now() + interval '1 hour',
               claim_generation = 1, attempts = 1
         WHERE work_id IN ('mail-1', 'mail-2');
        INSERT INTO {schema}.claim_log (kind, group_key, work_id, claimed_at)
        VALUES ('mail', 'tenant-a', 'mail-1', now()), ('mail', 'tenant-b', 'mail-2', now());
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at, attempts,
                                     claim_generation)
        VALUES ('pay-1', 'pay', '{}', 'failed', now(), 3, 3);
        INSERT INTO {schema}.outbox (work_id, kind, payload, has_dependencies)
        VALUES ('ship-1', 'ship', '{}', true);
        INSERT INTO {schema}.dependency (work_id, depends_on) VALUES ('ship-1', 'pay-1');
        """);
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String schedules =
          body(mvc.perform(get("/relay/schedules").with(VIEWER)).andExpect(status().isOk()));
      assertThat(schedules)
          .contains("nightly-report")
          .contains("cron &quot;0 2 * * *&quot; UTC")
          .contains("each: every missed slot runs, if no older than 6 h 0 min")
          .contains("every 30 s")
          .contains("skip: missed slots are dropped")
          .contains("overdue by 2 h")
          .contains("&lt;b&gt;ping&lt;/b&gt;")
          .doesNotContain("<b>ping");
      assertThat(schedules).containsPattern("<td>2</td><td>0</td>");

      String limits =
          body(mvc.perform(get("/relay/limits").with(VIEWER)).andExpect(status().isOk()));
      assertThat(limits)
          .contains("2 of 2 running")
          .contains("at most 1 per group; busiest: tenant-a 1 (at the limit), tenant-b 1")
          .contains("2 of 100 claims in the last 1 min 0 s")
          .contains("class=\"full\"");

      String dependent =
          body(mvc.perform(get("/relay/item?id=ship-1").with(VIEWER)).andExpect(status().isOk()));
      assertThat(dependent)
          .contains("Waits for")
          .contains("pay-1: failed \u2014 holds its dependents (dependency_failed)")
          .contains("href=\"/relay/item?id=pay-1\"")
          .contains("Nothing waits for it.");
      String dependency =
          body(mvc.perform(get("/relay/item?id=pay-1").with(VIEWER)).andExpect(status().isOk()));
      assertThat(dependency)
          .contains("Waits for nothing.")
          .contains("Waited for by")
          .contains("ship-1: ready");

      for (String page : new String[] {schedules, limits, dependent, dependency}) {
        Matcher internal = INTERNAL_NAME.matcher(page);
        assertThat(internal.find() ? internal.group() : null).isNull();
      }
      // The live parts the console's script swaps in, and the script itself (from the console).
      assertThat(dependent)
          .contains("<script src=\"/relay/console.js\" defer></script>")
          .contains("data-refresh=\"5000\"")
          .contains("id=\"item-facts\" data-live")
          .contains("id=\"item-history\" data-live");
      assertThat(body(mvc.perform(get("/relay").with(VIEWER))))
          .contains("id=\"overview-live\" data-live");
      assertThat(body(mvc.perform(get("/relay/work").with(VIEWER))))
          .contains("id=\"work-live\" data-live")
          .contains("data-refresh=\"5000\"")
          .contains("Live: this page updates itself every 5 s.");
      // A page with nothing live neither fetches itself again nor says it does.
      for (String still : new String[] {"/relay/kinds", "/relay/pauses", "/relay/search"}) {
        assertThat(body(mvc.perform(get(still).with(VIEWER)).andExpect(status().isOk())))
            .as(still)
            .doesNotContain("data-live")
            .doesNotContain("data-refresh")
            .doesNotContain("updates itself");
      }
      assertThat(
              mvc.perform(get("/relay/console.js"))
                  .andExpect(status().isOk())
                  .andReturn()
                  .getResponse()
                  .getContentType())
          .startsWith("text/javascript");
    }
  }

  /**
   * The pages that say they update themselves are exactly the templates with live parts: a page
   * given a live part without joining {@link Console#LIVE_VIEWS} would never refresh it, and one
   * left in the set without live parts would say it updates itself while it does not.
   */
  @Test
  void exactlyTheTemplatesWithLivePartsRefresh() throws Exception {
    Path templates =
        Path.of(Console.class.getResource("templates/layout.html").toURI()).getParent();
    TreeSet<String> live = new TreeSet<>();
    try (Stream<Path> files = Files.list(templates)) {
      for (Path file : files.toList()) {
        String name = file.getFileName().toString();
        if (name.endsWith(".html") && Files.readString(file).contains("data-live")) {
          live.add(name.substring(0, name.length() - ".html".length()));
        }
      }
    }
    assertThat(live).isNotEmpty().isEqualTo(new TreeSet<>(Console.LIVE_VIEWS));
  }

  @Test
  void payloadSearchIsBoundedByItsWindowAndSaysSo(TestDatabase db) throws Exception {
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, created_at)
        VALUES ('order-1', 'order_ack', '{"customer": {"id": 42}, "note": "<b>x</b>"}', now()),
               ('order-2', 'order_ack', '{"customer": {"id": 7}}', now()),
               ('order-3', 'order_ack', '{"customer": {"id": 42}}', now() - interval '3 hours'),
               ('mail-1', 'mail', '{"customer": {"id": 42}}', now());
        """);
    try (ConsoleApp app = ConsoleApp.start(db)) {
      MockMvc mvc = app.mvc();
      String form = body(mvc.perform(get("/relay/search").with(VIEWER)).andExpect(status().isOk()));
      assertThat(form)
          .contains("It never reads the whole table")
          .contains("at most 100,000 of them")
          .doesNotContain("class=\"search-results\"");

      String byPath =
          body(
              mvc.perform(
                      get("/relay/search")
                          .param("path", "customer.id")
                          .param("value", "42")
                          .param("kind", "order_ack")
                          .param("window", "1h")
                          .with(VIEWER))
                  .andExpect(status().isOk()));
      assertThat(byPath)
          .contains("href=\"/relay/item?id=order-1\"")
          .doesNotContain("order-2")
          .doesNotContain("order-3") // outside the window
          .doesNotContain("mail-1") // another kind
          .contains("Searched 3 items created in the last 1h")
          .contains("{&quot;customer&quot;:{&quot;id&quot;:42}}")
          .doesNotContain("only the newest were searched");

      String byJson =
          body(
              mvc.perform(
                      get("/relay/search")
                          .param("json", "{\"customer\": {\"id\": 42}}")
                          .param("window", "24h")
                          .with(VIEWER))
                  .andExpect(status().isOk()));
      assertThat(byJson).contains("order-1").contains("order-3").contains("mail-1");

      String bad =
          body(
              mvc.perform(get("/relay/search").param("json", "{\"a\": }").with(VIEWER))
                  .andExpect(status().isBadRequest()));
      assertThat(bad).contains("not valid JSON");
    }
  }
}
