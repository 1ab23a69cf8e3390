package dev.relay.app;

import static dev.relay.app.CommandLineTest.on;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.relay.admin.PurgePolicy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * status, list, show, redrive, supersede, cancel, pause, resume and purge, each run as a process.
 */
@RelayDatabaseTest
class OperatorCommandsTest {
  static void insert(TestDatabase db, String id, String kind, String queue) throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, queue) VALUES ('"
            + id
            + "', '"
            + kind
            + "', '{\"id\": \""
            + id
            + "\"}', '"
            + queue
            + "')");
  }

  /** Makes work failed as a worker would have left it, its first attempt {@code age} ago. */
  static void fail(TestDatabase db, String id, String age) throws Exception {
    db.execute(
        "UPDATE {schema}.outbox SET state = 'failed', attempts = 3, claim_generation = 3,"
            + " first_attempt_at = clock_timestamp() - interval '"
            + age
            + "', completed_at = clock_timestamp(), last_error_kind = 'http_503',"
            + " last_error = 'provider down', outcome = 'unknown' WHERE work_id = '"
            + id
            + "'");
  }

  static JsonNode json(Cli.Result r) throws Exception {
    assertThat(r.exitCode()).as(r.toString()).isZero();
    return Json.MAPPER.readTree(r.out());
  }

  /**
   * Runs each of {@code cases} against a database that refuses connections and expects a usage
   * error (exit 2) whose first line is the matching {@code expected} line: the check ran before
   * anything connected.
   */
  static void refusedBeforeTheDatabase(String[][] cases, String[] expected) {
    for (int i = 0; i < cases.length; i++) {
      List<String> args = new ArrayList<>(List.of(cases[i]));
      args.addAll(List.of("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x?connectTimeout=5"));
      Cli.Result r = Cli.run(args.toArray(String[]::new));
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err()).as(r.toString()).startsWith(expected[i] + "\n");
    }
  }

  @Nested
  class Status {
    @Test
    void jsonCarriesCountsAndAgesPerQueueAndKind(TestDatabase db) throws Exception {
      insert(db, "a", "mail", "default");
      insert(db, "b", "mail", "default");
      insert(db, "c", "sms", "urgent");
      fail(db, "b", "1 minute");
      JsonNode root = json(Cli.run(on(db, "status", "--json")));
      JsonNode queues = root.get("queues");
      assertThat(queues).hasSize(2);
      JsonNode mail = queues.get(0);
      assertThat(mail.get("queue").asText()).isEqualTo("default");
      assertThat(mail.get("kind").asText()).isEqualTo("mail");
      assertThat(mail.get("ready").asLong()).isEqualTo(1);
      assertThat(mail.get("failed").asLong()).isEqualTo(1);
      for (String field :
          List.of(
              "running",
              "done",
              "cancelled",
              "oldest_eligible_age_seconds",
              "expired_leases",
              "failures_by_reason")) {
        assertThat(mail.has(field)).as(field).isTrue();
      }
      assertThat(mail.get("oldest_eligible_age_seconds").asDouble()).isGreaterThanOrEqualTo(0);
      assertThat(mail.get("failures_by_reason").get("http_503").asLong()).isEqualTo(1);
      assertThat(queues.get(1).get("kind").asText()).isEqualTo("sms");
      assertThat(root.get("finished_counts_as_of").isNull()).isTrue();

      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
              + " WHERE work_id = 'c'");
      JsonNode refreshed = json(Cli.run(on(db, "status", "--json", "--refresh")));
      assertThat(refreshed.get("finished_counts_as_of").asText()).isNotEmpty();
      assertThat(refreshed.get("queues").get(1).get("done").asLong()).isEqualTo(1);
    }

    /**
     * Work that is not eligible yet (delayed an hour) has no oldest eligible age: null in JSON and
     * - in the table, not 0 (which reads as work claimable right now).
     */
    @Test
    void noEligibleWorkHasNoOldestEligibleAge(TestDatabase db) throws Exception {
      insert(db, "later", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET available_at = clock_timestamp() + interval '1 hour'"
              + " WHERE work_id = 'later'");
      JsonNode q = json(Cli.run(on(db, "status", "--json"))).get("queues").get(0);
      assertThat(q.get("ready").asLong()).isEqualTo(1);
      assertThat(q.get("oldest_eligible_age_seconds").isNull()).as(q.toString()).isTrue();
      Cli.Result table = Cli.run(on(db, "status"));
      assertThat(table.exitCode()).as(table.toString()).isZero();
      List<String> header = List.of(table.out().lines().findFirst().orElseThrow().split("\\s+"));
      String[] row = table.out().lines().skip(1).findFirst().orElseThrow().split("\\s+");
      assertThat(row[header.indexOf("OLDEST_ELIGIBLE")]).as(table.out()).isEqualTo("-");

      insert(db, "now", "mail", "default");
      JsonNode eligible = json(Cli.run(on(db, "status", "--json"))).get("queues").get(0);
      assertThat(eligible.get("oldest_eligible_age_seconds").isNumber()).isTrue();
    }

    /**
     * P50 and P95 as the console writes a latency (its Format.latency: "49 ms", then seconds to a
     * tenth, then minutes): console.md says the console shows them as relay status does, and status
     * printed "394ms".
     */
    @Test
    void completionTimesAreWrittenAsTheConsoleWritesThem(TestDatabase db) throws Exception {
      // 30 done items, created a minute ago, each finished 40 to 69 ms after it was created.
      db.execute(
          "INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,"
              + " claim_generation, attempts, first_attempt_at, outcome)"
              + " SELECT 'quick-' || g, 'mail', '{}', 'done', t.at,"
              + " t.at + (39 + g) * interval '1 millisecond', 1, 1, t.at, 'delivered'"
              + " FROM generate_series(1, 30) g,"
              + " LATERAL (SELECT now() - interval '1 minute' AS at) t");
      Cli.Result r = Cli.run(on(db, "status", "--refresh"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      String row = r.out().lines().skip(1).findFirst().orElseThrow();
      Matcher cells = Pattern.compile("  (\\d+) ms  +(\\d+) ms$").matcher(row);
      assertThat(cells.find()).as(r.out()).isTrue();
      // Within the rollup histogram's error of the true 54 ms and 68 ms.
      assertThat(Long.parseLong(cells.group(1))).isBetween(40L, 70L);
      assertThat(Long.parseLong(cells.group(2))).isBetween(55L, 85L);

      assertThat(StatusCommand.latency(Duration.ofNanos(400_000))).isEqualTo("< 1 ms");
      assertThat(StatusCommand.latency(Duration.ofMillis(394))).isEqualTo("394 ms");
      assertThat(StatusCommand.latency(Duration.ofMillis(1_240))).isEqualTo("1.2 s");
      assertThat(StatusCommand.latency(Duration.ofSeconds(185))).isEqualTo("3 min 5 s");
      assertThat(StatusCommand.latency(Duration.ofHours(27))).isEqualTo("1 d 3 h");
    }

    @Test
    void tableIsReadable(TestDatabase db) throws Exception {
      Cli.Result empty = Cli.run(on(db, "status"));
      assertThat(empty.exitCode()).as(empty.toString()).isZero();
      assertThat(empty.out()).contains("no work");
      insert(db, "a", "mail", "default");
      Cli.Result r = Cli.run(on(db, "status"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out().lines().findFirst().orElseThrow())
          .contains("QUEUE", "KIND", "READY", "RUNNING", "FAILED", "OLDEST_ELIGIBLE");
      assertThat(r.out()).contains("default", "mail").contains("not counted yet");
      assertThat(Cli.run(on(db, "status", "--refresh")).out()).contains("CANCELLED as of ");
    }
  }

  @Nested
  class ListAndShow {
    @Test
    void pagesWithTheCursorAndFilters(TestDatabase db) throws Exception {
      for (int i = 0; i < 5; i++) {
        insert(db, "w-" + i, i % 2 == 0 ? "even" : "odd", "default");
      }
      List<String> seen = new ArrayList<>();
      String cursor = null;
      int pages = 0;
      do {
        Cli.Result r =
            cursor == null
                ? Cli.run(on(db, "list", "--limit", "2", "--json"))
                : Cli.run(on(db, "list", "--limit", "2", "--after", cursor, "--json"));
        JsonNode page = json(r);
        page.get("items").forEach(i -> seen.add(i.get("work_id").asText()));
        cursor = page.get("next_cursor").isNull() ? null : page.get("next_cursor").asText();
        pages++;
      } while (cursor != null && pages < 10);
      assertThat(seen).containsExactly("w-0", "w-1", "w-2", "w-3", "w-4");

      Cli.Result odd = Cli.run(on(db, "list", "--kind", "odd"));
      assertThat(odd.exitCode()).as(odd.toString()).isZero();
      assertThat(odd.out()).contains("w-1", "w-3").doesNotContain("w-0");
      Cli.Result text = Cli.run(on(db, "list", "--limit", "2"));
      assertThat(text.out()).contains("WORK_ID").contains("more: --after ");
      Cli.Result badState = Cli.run(on(db, "list", "--state", "sleeping"));
      assertThat(badState.exitCode()).as(badState.toString()).isEqualTo(2);
      assertThat(badState.err())
          .startsWith(
              "relay list: --state 'sleeping' is not one of ready, running, done, failed,"
                  + " cancelled\n");
    }

    @Test
    void statusCountsAndListFindsWorkHeldByADependency(TestDatabase db) throws Exception {
      insert(db, "dep-a", "mail", "default");
      fail(db, "dep-a", "1 minute");
      insert(db, "dep-b", "mail", "default");
      insert(db, "dep-c", "mail", "default");
      insert(db, "free", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET has_dependencies = true"
              + " WHERE work_id IN ('dep-b', 'dep-c');"
              + " INSERT INTO {schema}.dependency (work_id, depends_on)"
              + " VALUES ('dep-b', 'dep-a'), ('dep-c', 'dep-b')");
      JsonNode mail = json(Cli.run(on(db, "status", "--json"))).get("queues").get(0);
      assertThat(mail.get("blocked").asLong()).isEqualTo(2);
      assertThat(mail.get("blocked_by_reason").get("dependency_failed").asLong()).isEqualTo(2);
      Cli.Result table = Cli.run(on(db, "status"));
      assertThat(table.out().lines().findFirst().orElseThrow()).contains("BLOCKED");
      assertThat(table.out()).contains("dependency_failed=2");

      Cli.Result blocked = Cli.run(on(db, "list", "--blocked"));
      assertThat(blocked.exitCode()).as(blocked.toString()).isZero();
      assertThat(blocked.out()).contains("dep-b", "dep-c").doesNotContain("free", "dep-a");
      Cli.Result none = Cli.run(on(db, "list", "--blocked-reason", "dependency_cancelled"));
      assertThat(none.out()).doesNotContain("dep-b");
      Cli.Result bad = Cli.run(on(db, "list", "--blocked-reason", "late"));
      assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
      assertThat(bad.err())
          .contains("--blocked-reason 'late' is not one of dependency_failed")
          .doesNotContain("blockedReason");
    }

    @Test
    void cancelWithDependentsEndsTheWaitingChain(TestDatabase db) throws Exception {
      insert(db, "dep-a", "mail", "default");
      fail(db, "dep-a", "1 minute");
      insert(db, "dep-b", "mail", "default");
      insert(db, "dep-c", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET has_dependencies = true"
              + " WHERE work_id IN ('dep-b', 'dep-c');"
              + " INSERT INTO {schema}.dependency (work_id, depends_on)"
              + " VALUES ('dep-b', 'dep-a'), ('dep-c', 'dep-b')");
      Cli.Result r =
          Cli.run(
              on(
                  db,
                  "cancel",
                  "dep-a",
                  "--with-dependents",
                  "--actor",
                  "mina@ops",
                  "--reason",
                  "order withdrawn"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("dep-a", "dep-b", "dep-c");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'"))
          .isEqualTo(3);
      Cli.Result noId =
          Cli.run(
              on(
                  db,
                  "cancel",
                  "--kind",
                  "mail",
                  "--with-dependents",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(noId.exitCode()).as(noId.toString()).isEqualTo(2);
      assertThat(noId.err()).contains("--with-dependents needs a work ID");
    }

    @Test
    void showsWhatWorkDependsOnAndWhyItIsBlocked(TestDatabase db) throws Exception {
      insert(db, "dep-a", "mail", "default");
      fail(db, "dep-a", "1 minute");
      insert(db, "dep-b", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET has_dependencies = true WHERE work_id = 'dep-b';"
              + " INSERT INTO {schema}.dependency (work_id, depends_on) VALUES ('dep-b', 'dep-a')");
      Cli.Result text = Cli.run(on(db, "show", "dep-b"));
      assertThat(text.exitCode()).as(text.toString()).isZero();
      assertThat(text.out())
          .contains("depends_on           dep-a (failed)")
          .contains("blocked              dependency_failed (dep-a)");
      JsonNode json = json(Cli.run(on(db, "show", "dep-b", "--json")));
      assertThat(json.get("depends_on").get(0).get("state").asText()).isEqualTo("failed");
      assertThat(json.get("blocked_reason").asText()).isEqualTo("dependency_failed");
      assertThat(json.get("blocked_by").asText()).isEqualTo("dep-a");
    }

    @Test
    void showsTheRowHistoryAndAuditOrExitsOneWhenNotFound(TestDatabase db) throws Exception {
      insert(db, "s-1", "mail", "default");
      fail(db, "s-1", "1 minute");
      db.execute(
          "INSERT INTO {schema}.attempt (work_id, generation, worker, ending, error_kind, error,"
              + " outcome) VALUES ('s-1', 3, 'worker-a', 'failed', 'http_503', 'provider down',"
              + " 'unknown')");
      db.execute(
          "INSERT INTO {schema}.attempt (work_id, generation, worker, ending, action, outcome,"
              + " receiver_ref) VALUES ('s-1', 4, 'worker-b', 'abandoned', 'complete', 'delivered',"
              + " 'msg-7')");
      Cli.Result text = Cli.run(on(db, "show", "s-1"));
      assertThat(text.exitCode()).as(text.toString()).isZero();
      assertThat(text.out())
          .contains("work_id              s-1")
          .contains("state                failed")
          .contains("last_error_kind      http_503")
          .contains("last_error           provider down")
          .contains("attempts (generations")
          .contains("worker-a")
          .containsPattern("abandoned +complete +worker-b .* delivered +msg-7")
          .contains("redrives:");
      JsonNode json = json(Cli.run(on(db, "show", "s-1", "--json")));
      assertThat(json.get("payload").get("id").asText()).isEqualTo("s-1");
      // The count is named as in list --json; the history has its own name.
      assertThat(json.get("attempts").asInt())
          .isEqualTo(
              json(Cli.run(on(db, "list", "--json"))).get("items").get(0).get("attempts").asInt());
      assertThat(json.get("attempt_history").get(0).get("ending").asText()).isEqualTo("failed");
      assertThat(json.get("attempt_history").get(1).get("action").asText()).isEqualTo("complete");
      assertThat(json.get("attempt_history").get(1).get("receiver_ref").asText())
          .isEqualTo("msg-7");

      Cli.Result missing = Cli.run(on(db, "show", "nope"));
      assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(1);
      assertThat(missing.err()).contains("no work has ID 'nope'");
      Cli.Result noId = Cli.run(on(db, "show"));
      assertThat(noId.exitCode()).as(noId.toString()).isEqualTo(2);
    }
  }

  @Nested
  class Redrive {
    @Test
    void redrivesFailedWorkWithAnAuditAndARisingGeneration(TestDatabase db) throws Exception {
      insert(db, "r-1", "mail", "default");
      fail(db, "r-1", "1 hour");
      Cli.Result r =
          Cli.run(on(db, "redrive", "r-1", "--actor", "mina", "--reason", "outage over INC-42"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("redriven r-1 (was failed at generation 3)");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'r-1'"))
          .isEqualTo("ready");
      assertThat(
              db.queryString(
                  "SELECT actor || '|' || reason || '|' || from_generation"
                      + " FROM {schema}.redrive_audit WHERE work_id = 'r-1'"))
          .isEqualTo("mina|outage over INC-42|3");
      assertThat(db.queryLong("SELECT claim_generation FROM {schema}.work WHERE work_id = 'r-1'"))
          .isGreaterThanOrEqualTo(3);
    }

    /**
     * A filtered redrive that stops at --limit says how many failed items it left; --limit with an
     * ID is a usage error.
     */
    @Test
    void aFilteredRedriveSaysHowManyItLeftPastTheLimit(TestDatabase db) throws Exception {
      for (int i = 1; i <= 3; i++) {
        insert(db, "l-" + i, "mail", "default");
        fail(db, "l-" + i, "1 minute");
      }
      Cli.Result r =
          Cli.run(
              on(
                  db,
                  "redrive",
                  "--state",
                  "failed",
                  "--limit",
                  "2",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out())
          .as(r.toString())
          .startsWith("redriven l-1")
          .endsWith(
              "2 redriven, 0 refused: 0 not failed, 0 running, 0 past their kind's deduplication"
                  + " horizon; 1 more match past --limit 2: run again to take them\n");
      Cli.Result withId =
          Cli.run(on(db, "redrive", "l-3", "--limit", "5", "--actor", "a", "--reason", "r"));
      assertThat(withId.exitCode()).as(withId.toString()).isEqualTo(2);
      assertThat(withId.err()).startsWith("relay redrive: --limit bounds a filtered redrive");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'l-3'"))
          .isEqualTo("failed");
    }

    @Test
    void refusesWorkThatIsNotFailedUnlessForced(TestDatabase db) throws Exception {
      insert(db, "r-2", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp(),"
              + " first_attempt_at = clock_timestamp(), claim_generation = 1"
              + " WHERE work_id = 'r-2'");
      Cli.Result refused = Cli.run(on(db, "redrive", "r-2", "--actor", "a", "--reason", "r"));
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(1);
      assertThat(refused.err())
          .contains("is done, not failed; redriving it runs it again [--force overrides]")
          .doesNotContain("(force)");
      Cli.Result forced =
          Cli.run(on(db, "redrive", "r-2", "--actor", "a", "--reason", "r", "--force"));
      assertThat(forced.exitCode()).as(forced.toString()).isZero();
    }

    @Test
    void refusesPastTheDedupHorizonUnlessOverridden(TestDatabase db) throws Exception {
      insert(db, "r-3", "mail", "default");
      fail(db, "r-3", "3 days"); // an unregistered kind is judged by the default 24 h horizon
      Cli.Result refused = Cli.run(on(db, "redrive", "r-3", "--actor", "a", "--reason", "r"));
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(1);
      assertThat(refused.err()).contains("horizon").contains("--override-horizon");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'r-3'"))
          .isEqualTo("failed");
      Cli.Result overridden =
          Cli.run(on(db, "redrive", "r-3", "--actor", "a", "--reason", "r", "--override-horizon"));
      assertThat(overridden.exitCode()).as(overridden.toString()).isZero();
      assertThat(overridden.out()).contains("with an override");
    }

    @Test
    void redrivesByFilterAndRequiresActorAndReason(TestDatabase db) throws Exception {
      insert(db, "f-1", "mail", "default");
      insert(db, "f-2", "mail", "default");
      insert(db, "f-3", "sms", "default");
      fail(db, "f-1", "1 minute");
      fail(db, "f-2", "1 minute");
      fail(db, "f-3", "1 minute");
      Cli.Result noReason = Cli.run(on(db, "redrive", "f-1", "--actor", "a"));
      assertThat(noReason.exitCode()).as(noReason.toString()).isEqualTo(2);
      Cli.Result neither = Cli.run(on(db, "redrive", "--actor", "a", "--reason", "r"));
      assertThat(neither.exitCode()).as(neither.toString()).isEqualTo(2);
      Cli.Result r =
          Cli.run(
              on(
                  db,
                  "redrive",
                  "--state",
                  "failed",
                  "--kind",
                  "mail",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("2 redriven, 0 refused");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'f-3'"))
          .isEqualTo("failed");
    }

    @Test
    void aFilterMatchingOnlyWorkThatIsNotFailedReportsItRefusedWithExitOne(TestDatabase db)
        throws Exception {
      insert(db, "c-1", "charge", "default");
      insert(db, "c-2", "charge", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'cancelled', completed_at = clock_timestamp()"
              + " WHERE work_id IN ('c-1', 'c-2')");
      for (List<String> filter :
          List.of(List.of("--state", "cancelled"), List.of("--kind", "charge"))) {
        List<String> args = new ArrayList<>(List.of("redrive", "--actor", "me", "--reason", "t"));
        args.addAll(filter);
        Cli.Result r = Cli.run(on(db, args.toArray(String[]::new)));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.out())
            .as(r.toString())
            .contains("0 redriven, 2 refused: 2 not failed [--force overrides], 0 running, 0 past");
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'"))
          .isEqualTo(2);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.redrive_audit")).isZero();
    }

    @Test
    void aFilteredRedriveCountsEachRefusedItemOnceWhateverRefusedIt(TestDatabase db)
        throws Exception {
      insert(db, "m-failed", "charge", "default");
      fail(db, "m-failed", "1 minute");
      insert(db, "m-old", "charge", "default");
      fail(db, "m-old", "3 days"); // past the default 24 h horizon: selected, refused by the run
      insert(db, "m-running", "charge", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'running', attempts = 1, claim_generation = 1,"
              + " claimed_by = 'w', lease_until = clock_timestamp() + interval '1 minute',"
              + " first_attempt_at = clock_timestamp() WHERE work_id = 'm-running'");
      insert(db, "m-cancelled", "charge", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'cancelled', completed_at = clock_timestamp()"
              + " WHERE work_id = 'm-cancelled'");

      Cli.Result r =
          Cli.run(on(db, "redrive", "--kind", "charge", "--actor", "me", "--reason", "t"));

      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.out())
          .as(r.toString())
          .contains("redriven m-failed", "refused m-old")
          .contains(
              "1 redriven, 3 refused: 1 not failed [--force overrides], 1 running"
                  + " [never overridable], 1 past their kind's deduplication horizon"
                  + " [--override-horizon overrides");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'm-failed'"))
          .isEqualTo("ready");

      Cli.Result onlyFailed =
          Cli.run(
              on(
                  db,
                  "redrive",
                  "--kind",
                  "charge",
                  "--state",
                  "failed",
                  "--override-horizon",
                  "--actor",
                  "me",
                  "--reason",
                  "t"));
      assertThat(onlyFailed.exitCode()).as(onlyFailed.toString()).isZero();
      assertThat(onlyFailed.out()).contains("1 redriven, 0 refused");
    }

    /**
     * A number too large for an int was "'99999999999' is not an int"; it is refused in the
     * option's documented range, as a smaller value outside it is (an int's, for --priority).
     */
    @Test
    void aNumberTooLargeForAnIntIsOutOfTheOptionsRange() {
      String[][] cases = {
        {"enqueue", "--id", "a", "--kind", "k", "--payload", "{}", "--max-attempts", "99999999999"},
        {"enqueue", "--id", "a", "--kind", "k", "--payload", "{}", "--priority", "99999999999"},
        {"list", "--limit", "99999999999"},
        {"cancel", "--kind", "k", "--limit", "-99999999999", "--actor", "a", "--reason", "r"},
        {"redrive", "--kind", "k", "--limit", "3000000000", "--actor", "a", "--reason", "r"},
        {"purge", "--batch-size", "99999999999", "--dry-run"},
        {"list", "--limit", "many"},
      };
      String[] expected = {
        "relay enqueue: --max-attempts must be between 1 and 10000, was 99999999999",
        "relay enqueue: --priority must be between -2147483648 and 2147483647, was 99999999999",
        "relay list: --limit must be between 1 and 1000, was 99999999999",
        "relay cancel: --limit must be between 1 and 10000, was -99999999999",
        "relay redrive: --limit must be between 1 and 10000, was 3000000000",
        "relay purge: --batch-size must be between 1 and "
            + dev.relay.admin.PurgePolicy.MAX_BATCH_SIZE
            + ", was 99999999999",
        "relay list: Invalid value for option '--limit': 'many' is not an int",
      };
      refusedBeforeTheDatabase(cases, expected);
    }

    /**
     * Kind and queue filters by enqueue's name rule, ordering keys and work IDs by its ID rule,
     * before the database is opened (here one that refuses connections: exit 2, not 3): a name no
     * work can have was "no work matches" (exit 0), an ID "no work has ID" (exit 1).
     */
    @Test
    void namesKeysAndIdsAreCheckedByEnqueuesRulesBeforeTheDatabase() {
      String[][] cases = {
        {"list", "--kind", "a b"},
        {"list", "--queue", "x".repeat(101)},
        {"list", "--key", "k\u00e9y"},
        {"cancel", "--kind", "", "--actor", "a", "--reason", "r"},
        {"redrive", "--queue", "q!", "--actor", "a", "--reason", "r"},
        {"purge", "--kind", "a b", "--actor", "a", "--reason", "r", "--dry-run"},
        {"show", "a b"},
        {"cancel", "a b", "--actor", "a", "--reason", "r"},
        {"redrive", "a%b", "--actor", "a", "--reason", "r"},
      };
      String[] expected = {
        "relay list: --kind 'a b' must be 1-100 characters from A-Z a-z 0-9 . _ - :",
        "relay list: --queue 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (101 characters)' must be"
            + " 1-100 characters from A-Z a-z 0-9 . _ - :",
        "relay list: --key 'k\u00e9y' must be 1-200 characters from A-Z a-z 0-9 . _ - : / @ + = #",
        "relay cancel: --kind is empty",
        "relay redrive: --queue 'q!' must be 1-100 characters from A-Z a-z 0-9 . _ - :",
        "relay purge: --kind 'a b' must be 1-100 characters from A-Z a-z 0-9 . _ - :",
        "relay show: ID 'a b' may only contain A-Z a-z 0-9 . _ - : / @ + = #",
        "relay cancel: ID 'a b' may only contain A-Z a-z 0-9 . _ - : / @ + = #",
        "relay redrive: ID 'a%b' may only contain A-Z a-z 0-9 . _ - : / @ + = #",
      };
      refusedBeforeTheDatabase(cases, expected);
    }

    @Test
    void everyRangeIsCheckedBeforeTheDatabaseEvenOnAnUnmigratedSchema(TestDatabase db)
        throws Exception {
      String[][] cases = {
        {"list", "--limit", "-5"},
        {"list", "--state", "bogus"},
        {"list", "--after", "not-a-cursor"},
        {"list", "--newer-than", "P36500DT1S"},
        {"status", "--window", "0s"},
        {"redrive", "--state", "failed", "--limit", "0", "--actor", "a", "--reason", "r"},
        {"cancel", "--kind", "k", "--limit", "10001", "--actor", "a", "--reason", "r"},
        {"pause", "--queue", "q", "--actor", " ", "--reason", "r"},
        {"purge", "--state", "done", "--older-than", "36501d", "--dry-run"},
        // too long for a Duration or a long: the same range, the value as typed
        {"list", "--older-than", "9223372036854775807d"},
        {"status", "--window", "99999999999999999999d"},
        {
          "pause", "--queue", "q", "--for", "99999999999999999999d", "--actor", "a", "--reason", "r"
        },
        {"purge", "--retention", "PT9223372036854775807H", "--dry-run"},
      };
      String[] expected = {
        "relay list: --limit must be between 1 and 1000, was -5",
        "relay list: --state 'bogus' is not one of ready, running, done, failed, cancelled",
        "relay list: --after is not a cursor returned by list (leave --after out for the first"
            + " page)",
        "relay list: --newer-than must be at most 36500d (100 years), was 36500d1s",
        "relay status: --window must be between 1s and 365d, was 0s",
        "relay redrive: --limit must be between 1 and 10000, was 0",
        "relay cancel: --limit must be between 1 and 10000, was 10001",
        "relay pause: --actor is empty",
        "relay purge: --older-than must be at most 36500d (100 years), was 36501d",
        "relay list: --older-than must be at most 36500d (100 years), was 9223372036854775807d",
        "relay status: --window must be between 1s and 365d, was 99999999999999999999d",
        "relay pause: --for must be at most 36500d (100 years), was 99999999999999999999d",
        "relay purge: --retention must be between "
            + Durations.format(PurgePolicy.MIN_RETENTION)
            + " and "
            + Durations.format(PurgePolicy.MAX_RETENTION)
            + ", was PT9223372036854775807H",
      };
      for (int i = 0; i < cases.length; i++) {
        List<String> args = new ArrayList<>(List.of(cases[i]));
        args.addAll(List.of("--jdbc-url", db.jdbcUrl(), "--schema", "relay_never_made"));
        Cli.Result r = Cli.run(args.toArray(String[]::new));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).as(r.toString()).startsWith(expected[i] + "\n");
      }
      assertThat(
              db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = 'relay_never_made'"))
          .as("nothing made the schema")
          .isZero();
    }
  }

  @Nested
  class SupersedeAndCancel {
    @Test
    void supersedeLinksBothItemsAndCancelsTheOld(TestDatabase db) throws Exception {
      insert(db, "old-1", "mail", "default");
      Cli.Result r =
          Cli.run(
              on(
                  db,
                  "supersede",
                  "old-1",
                  "--new-id",
                  "old-1-v2",
                  "--kind",
                  "mail",
                  "--payload",
                  "{\"total\": 31}",
                  "--actor",
                  "mina",
                  "--reason",
                  "wrong total"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("superseded old-1 by old-1-v2; old work cancelled");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'old-1'"))
          .isEqualTo("cancelled");
      assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'old-1-v2'"))
          .isEqualTo("ready");
      Cli.Result shown = Cli.run(on(db, "show", "old-1-v2"));
      assertThat(shown.out()).contains("replaces old-1");
      Cli.Result old = Cli.run(on(db, "show", "old-1"));
      assertThat(old.out()).contains("replaced by old-1-v2");

      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
              + " WHERE work_id = 'old-1-v2'");
      Cli.Result refused =
          Cli.run(
              on(
                  db,
                  "supersede",
                  "old-1-v2",
                  "--new-id",
                  "old-1-v3",
                  "--kind",
                  "mail",
                  "--payload",
                  "{}",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(1);
      Cli.Result both =
          Cli.run(
              on(
                  db,
                  "supersede",
                  "old-1",
                  "--new-id",
                  "x",
                  "--kind",
                  "mail",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(both.exitCode()).as(both.toString()).isEqualTo(2);
    }

    @Test
    void cancelsOneOrAFilterAndSaysWhatItCouldNot(TestDatabase db) throws Exception {
      insert(db, "c-1", "mail", "default");
      insert(db, "c-2", "sms", "bulk");
      insert(db, "c-3", "sms", "bulk");
      Cli.Result one = Cli.run(on(db, "cancel", "c-1", "--actor", "a", "--reason", "dup"));
      assertThat(one.exitCode()).as(one.toString()).isZero();
      assertThat(one.out()).contains("cancelled c-1 (was ready)");
      assertThat(db.queryString("SELECT actor || '|' || reason FROM {schema}.cancel_audit LIMIT 1"))
          .isEqualTo("a|dup");
      Cli.Result again = Cli.run(on(db, "cancel", "c-1", "--actor", "a", "--reason", "dup"));
      assertThat(again.exitCode()).as(again.toString()).isZero();
      Cli.Result missing = Cli.run(on(db, "cancel", "nope", "--actor", "a", "--reason", "r"));
      assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(1);
      Cli.Result bulk =
          Cli.run(on(db, "cancel", "--queue", "bulk", "--actor", "a", "--reason", "campaign off"));
      assertThat(bulk.exitCode()).as(bulk.toString()).isZero();
      assertThat(bulk.out()).contains("2 cancelled");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'cancelled'"))
          .isEqualTo(3);
    }

    /**
     * A filtered cancel that stops at --limit says how many matching items it left (exit 0: the
     * limit is what was asked for), and says nothing once none are left; --limit with an ID, which
     * it ignored, is a usage error.
     */
    @Test
    void aFilteredCancelSaysHowManyItLeftPastTheLimit(TestDatabase db) throws Exception {
      for (int i = 1; i <= 4; i++) {
        insert(db, "m-" + i, "k", "default");
      }
      String[] cancel = {
        "cancel",
        "--kind",
        "k",
        "--state",
        "ready",
        "--limit",
        "2",
        "--actor",
        "me",
        "--reason",
        "lim"
      };
      Cli.Result first = Cli.run(on(db, cancel));
      assertThat(first.exitCode()).as(first.toString()).isZero();
      assertThat(first.out())
          .as(first.toString())
          .contains("cancelled m-1 (was ready)", "cancelled m-2 (was ready)")
          .endsWith(
              "2 cancelled, 0 cancel requested, 0 refused: already done (its effect happened),"
                  + " 0 already cancelled; 2 more match past --limit 2: run again to take them\n");
      Cli.Result second = Cli.run(on(db, cancel));
      assertThat(second.exitCode()).as(second.toString()).isZero();
      assertThat(second.out())
          .as(second.toString())
          .endsWith(
              "2 cancelled, 0 cancel requested, 0 refused: already done (its effect happened),"
                  + " 0 already cancelled\n");
      Cli.Result withId =
          Cli.run(on(db, "cancel", "m-1", "--limit", "5", "--actor", "me", "--reason", "lim"));
      assertThat(withId.exitCode()).as(withId.toString()).isEqualTo(2);
      assertThat(withId.err())
          .startsWith(
              "relay cancel: --limit bounds a filtered cancel: give filters, or leave --limit"
                  + " out");
    }

    @Test
    void aFilteredCancelReportsDoneWorkAsRefusedWithExitOneAndCancelledWorkAsAlreadyCancelled(
        TestDatabase db) throws Exception {
      insert(db, "d-1", "mail", "default");
      insert(db, "d-2", "mail", "default");
      insert(db, "d-3", "mail", "default");
      insert(db, "d-4", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
              + " WHERE work_id IN ('d-1', 'd-2')");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'cancelled', completed_at = clock_timestamp()"
              + " WHERE work_id = 'd-3'");
      Cli.Result done =
          Cli.run(on(db, "cancel", "--state", "done", "--actor", "qa", "--reason", "t"));
      assertThat(done.exitCode()).as(done.toString()).isEqualTo(1);
      assertThat(done.out())
          .as(done.toString())
          .endsWith(
              "0 cancelled, 0 cancel requested, 2 refused: already done (its effect happened),"
                  + " 0 already cancelled\n");
      Cli.Result cancelled =
          Cli.run(on(db, "cancel", "--state", "cancelled", "--actor", "qa", "--reason", "t"));
      assertThat(cancelled.exitCode()).as(cancelled.toString()).isZero();
      assertThat(cancelled.out())
          .as(cancelled.toString())
          .endsWith(
              "0 cancelled, 0 cancel requested, 0 refused: already done (its effect"
                  + " happened), 1 already cancelled\n");
      Cli.Result kind =
          Cli.run(on(db, "cancel", "--kind", "mail", "--actor", "qa", "--reason", "t"));
      assertThat(kind.exitCode()).as(kind.toString()).isEqualTo(1);
      assertThat(kind.out())
          .as(kind.toString())
          .contains("cancelled d-4 (was ready)")
          .endsWith(
              "1 cancelled, 0 cancel requested, 2 refused: already done (its effect happened),"
                  + " 1 already cancelled\n");
      assertThat(
              db.queryString(
                  "SELECT string_agg(work_id || '=' || state, ',' ORDER BY work_id)"
                      + " FROM {schema}.work"))
          .isEqualTo("d-1=done,d-2=done,d-3=cancelled,d-4=cancelled");
    }
  }

  @Nested
  class PauseAndResume {
    @Test
    void pauseShowsInStatusAndResumeLiftsItAudited(TestDatabase db) throws Exception {
      insert(db, "p-1", "mail", "default");
      Cli.Result paused =
          Cli.run(
              on(
                  db,
                  "pause",
                  "--kind",
                  "mail",
                  "--actor",
                  "olga",
                  "--reason",
                  "smtp down",
                  "--for",
                  "2h"));
      assertThat(paused.exitCode()).as(paused.toString()).isZero();
      assertThat(paused.out()).contains("paused every queue, kind mail since ", "resuming");

      Cli.Result table = Cli.run(on(db, "status"));
      assertThat(table.out())
          .as(table.toString())
          .contains("PAUSED every queue, kind mail since ", "by olga: smtp down", "resumes at");
      JsonNode root = json(Cli.run(on(db, "status", "--json")));
      assertThat(root.get("queues").get(0).get("paused_since").asText()).isNotEmpty();
      assertThat(root.get("pauses").get(0).get("kind").asText()).isEqualTo("mail");
      assertThat(root.get("pauses").get(0).get("queue").isNull()).isTrue();

      Cli.Result resumed =
          Cli.run(on(db, "resume", "--kind", "mail", "--actor", "olga", "--reason", "smtp back"));
      assertThat(resumed.exitCode()).as(resumed.toString()).isZero();
      // The target as status names it, then one parenthesis (not "(every queue) (paused ...").
      assertThat(resumed.out())
          .contains("resumed every queue, kind mail (paused since ", "by olga: smtp down)")
          .doesNotContain(") (");
      Cli.Result again =
          Cli.run(on(db, "resume", "--kind", "mail", "--actor", "olga", "--reason", "twice"));
      assertThat(again.exitCode()).as(again.toString()).isEqualTo(1);
      assertThat(again.err()).contains("is not paused");
      assertThat(
              db.queryString(
                  "SELECT string_agg(action || ' ' || reason, ', ' ORDER BY id)"
                      + " FROM {schema}.pause_audit"))
          .isEqualTo("pause smtp down, resume smtp back, resume twice");
      assertThat(Cli.run(on(db, "status")).out()).doesNotContain("PAUSED");
    }

    @Test
    void badInputIsAUsageErrorAndChangesNothing(TestDatabase db) throws Exception {
      Cli.Result noTarget = Cli.run(on(db, "pause", "--actor", "a", "--reason", "r"));
      assertThat(noTarget.exitCode()).as(noTarget.toString()).isEqualTo(2);
      assertThat(noTarget.err()).contains("--queue Q, --kind K, or both");
      Cli.Result past =
          Cli.run(
              on(
                  db,
                  "pause",
                  "--queue",
                  "q",
                  "--actor",
                  "a",
                  "--reason",
                  "r",
                  "--until",
                  "2001-01-01T00:00:00Z"));
      assertThat(past.exitCode()).as(past.toString()).isEqualTo(2);
      assertThat(past.err())
          .startsWith("relay pause: --until 2001-01-01T00:00:00Z is not after this machine's clock")
          .contains("leave --until out")
          .doesNotContain("resumeAt");
      Cli.Result blank = Cli.run(on(db, "pause", "--queue", "q", "--actor", "a", "--reason", " "));
      assertThat(blank.exitCode()).as(blank.toString()).isEqualTo(2);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause_audit")).isZero();
    }

    /**
     * --until was taken up to year 9999 while --for stops at 100 years; it stops there too, with
     * the same words, before the database is opened; a time within it is taken.
     */
    @Test
    void anUntilBeyondAHundredYearsIsRefusedAsALongerForIs(TestDatabase db) throws Exception {
      Cli.Result endless =
          Cli.run(
              "pause",
              "--queue",
              "q",
              "--actor",
              "a",
              "--reason",
              "r",
              "--until",
              "9999-12-31T23:59:00Z",
              "--jdbc-url",
              "jdbc:postgresql://127.0.0.1:1/x");
      assertThat(endless.exitCode()).as(endless.toString()).isEqualTo(2);
      assertThat(endless.err())
          .as(endless.toString())
          .startsWith(
              "relay pause: --until must be at most 36500d (100 years) from this machine's clock,"
                  + " so no later than ")
          .contains(", was 9999-12-31T23:59:00Z; leave --until out to pause until resumed\n");
      String within =
          java.time.Instant.now()
              .plus(java.time.Duration.ofDays(36_000))
              .truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
              .toString();
      Cli.Result taken =
          Cli.run(
              on(db, "pause", "--queue", "q", "--actor", "a", "--reason", "r", "--until", within));
      assertThat(taken.exitCode()).as(taken.toString()).isZero();
      assertThat(taken.out()).contains("resuming automatically at " + within);
    }

    /**
     * What needs no database gets the same answer (exit 2, one line) with the database up, down,
     * and on a schema never migrated: names enqueue refuses (by its rule and message), an --until
     * in the past and a --for beyond 100 years.
     */
    @Test
    void badNamesAPastUntilAndAnEndlessForAreRefusedBeforeConnecting(TestDatabase db)
        throws Exception {
      String[][] cases = {
        {
          "pause --queue bad_queue! --actor a --reason r",
          "--queue 'bad_queue!' must be 1-100 characters from A-Z a-z 0-9 . _ - :"
        },
        {
          "resume --kind k --queue bad_queue! --actor a --reason r",
          "--queue 'bad_queue!' must be 1-100 characters from A-Z a-z 0-9 . _ - :"
        },
        {
          "pause --kind send/sms --actor a --reason r",
          "--kind 'send/sms' must be 1-100 characters from A-Z a-z 0-9 . _ - :"
        },
        {
          "pause --queue q --actor a --reason r --until 2001-01-01T00:00:00Z",
          "--until 2001-01-01T00:00:00Z is not after this machine's clock ("
        },
        {
          "pause --queue q --actor a --reason r --for 1000000d",
          "--for must be at most 36500d (100 years), was 1000000d"
        },
      };
      String[][] databases = {
        {db.jdbcUrl(), db.schema()},
        {"jdbc:postgresql://127.0.0.1:1/x?connectTimeout=5", "relay"},
        {db.jdbcUrl(), "relay_never_made"},
      };
      for (String[] c : cases) {
        String command = c[0].substring(0, c[0].indexOf(' '));
        for (String[] database : databases) {
          List<String> args = new ArrayList<>(List.of(c[0].split(" ")));
          args.addAll(List.of("--jdbc-url", database[0], "--schema", database[1]));
          Cli.Result r = Cli.run(args.toArray(String[]::new));
          assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
          assertThat(r.err().lines().toList())
              .as(r.toString())
              .hasSize(2)
              .first()
              .asString()
              .startsWith("relay " + command + ": " + c[1]);
        }
      }
      Cli.Result enqueue =
          Cli.run(
              on(
                  db,
                  "enqueue",
                  "--id",
                  "a",
                  "--kind",
                  "k",
                  "--queue",
                  "bad_queue!",
                  "--payload",
                  "{}"));
      assertThat(enqueue.err())
          .as("the same rule and words as enqueue")
          .contains(": --queue 'bad_queue!' must be 1-100 characters from A-Z a-z 0-9 . _ - :");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause_audit")).isZero();
      assertThat(
              db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = 'relay_never_made'"))
          .isZero();
    }
  }

  @Nested
  class Purge {
    @Test
    void dryRunCountsAndPurgeKeepsFailedAndInHorizonWork(TestDatabase db) throws Exception {
      insert(db, "old-done", "mail", "default");
      insert(db, "new-done", "mail", "default");
      insert(db, "old-failed", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp() - interval"
              + " '3 days' WHERE work_id = 'old-done'");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
              + " WHERE work_id = 'new-done'");
      fail(db, "old-failed", "30 days");
      db.execute(
          "UPDATE {schema}.outbox SET completed_at = clock_timestamp() - interval '30 days'"
              + " WHERE work_id = 'old-failed'");
      JsonNode dry = json(Cli.run(on(db, "purge", "--retention", "1h", "--dry-run", "--json")));
      assertThat(dry.get("dry_run").asBoolean()).isTrue();
      assertThat(dry.get("work").asLong()).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(3);

      Cli.Result r = Cli.run(on(db, "purge", "--retention", "1h"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).startsWith("purged: 1 work items");
      assertThat(
              db.queryString("SELECT string_agg(work_id, ',' ORDER BY work_id) FROM {schema}.work"))
          .isEqualTo("new-done,old-failed");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone WHERE work_id = 'old-done'"))
          .isEqualTo(1);
      Cli.Result reused =
          Cli.run(
              on(db, "enqueue", "--id", "old-done", "--kind", "mail", "--payload", "{\"x\": 2}"));
      assertThat(reused.exitCode()).as(reused.toString()).isEqualTo(1);
      assertThat(reused.err()).contains("old-done");

      Cli.Result bad = Cli.run(on(db, "purge", "--retention", "soon"));
      assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    }

    @Test
    void retiresAWholeDayOfTheHistoryTableLeavingTombstones(TestDatabase db) throws Exception {
      // done 40 days ago and moved to its day of the history table, as a worker leaves it
      insert(db, "old-history", "mail", "default");
      db.execute(
          "SELECT {schema}.add_history_day("
              + "((clock_timestamp() - interval '40 days') AT TIME ZONE 'UTC')::date);"
              + " UPDATE {schema}.outbox SET state = 'done', outcome = 'delivered',"
              + " completed_at = clock_timestamp() - interval '40 days'"
              + " WHERE work_id = 'old-history';"
              + " WITH m AS (DELETE FROM {schema}.outbox WHERE work_id = 'old-history'"
              + " RETURNING *) INSERT INTO {schema}.work_history SELECT * FROM m");
      JsonNode dry = json(Cli.run(on(db, "purge", "--retention", "1h", "--dry-run", "--json")));
      assertThat(dry.get("history_days").asLong()).isEqualTo(1);
      assertThat(dry.get("work").asLong()).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work_history")).isEqualTo(1);

      Cli.Result r = Cli.run(on(db, "purge", "--retention", "1h"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).startsWith("purged: 1 work items").contains("1 whole days of history");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
      assertThat(
              db.queryString(
                  "SELECT final_state FROM {schema}.tombstone WHERE work_id = 'old-history'"))
          .isEqualTo("done");
      Cli.Result reused =
          Cli.run(
              on(
                  db,
                  "enqueue",
                  "--id",
                  "old-history",
                  "--kind",
                  "mail",
                  "--payload",
                  "{\"x\": 2}"));
      assertThat(reused.exitCode()).as(reused.toString()).isEqualTo(1);
      assertThat(reused.err()).contains("old-history");
    }

    @Test
    void byFilterPurgesFinishedWorkPastItsHorizonAuditedAndRefusesTheRest(TestDatabase db)
        throws Exception {
      insert(db, "test-1", "mail", "test");
      insert(db, "test-2", "mail", "test");
      insert(db, "test-new", "mail", "test");
      insert(db, "test-failed", "mail", "test");
      insert(db, "prod-1", "mail", "default");
      db.execute(
          "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp() - interval"
              + " '2 days' WHERE work_id IN ('test-1', 'prod-1');"
              + "UPDATE {schema}.outbox SET state = 'cancelled', completed_at = clock_timestamp()"
              + " - interval '2 days' WHERE work_id = 'test-2';"
              + "UPDATE {schema}.outbox SET state = 'done', completed_at = clock_timestamp()"
              + " WHERE work_id = 'test-new'");
      fail(db, "test-failed", "3 days");

      JsonNode dry = json(Cli.run(on(db, "purge", "--queue", "test", "--dry-run", "--json")));
      assertThat(dry.get("matching").asLong()).isEqualTo(4);
      assertThat(dry.get("purged").asLong()).isEqualTo(2);
      assertThat(dry.get("refused_not_finished").asLong()).isEqualTo(1);
      assertThat(dry.get("refused_within_horizon").asLong()).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(5);

      Cli.Result missing = Cli.run(on(db, "purge", "--queue", "test"));
      assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(2);
      assertThat(missing.err()).contains("--actor");
      Cli.Result mixed =
          Cli.run(
              on(
                  db,
                  "purge",
                  "--queue",
                  "test",
                  "--retention",
                  "1h",
                  "--actor",
                  "a",
                  "--reason",
                  "r"));
      assertThat(mixed.exitCode()).as(mixed.toString()).isEqualTo(2);
      assertThat(mixed.err()).contains("--retention applies to the retention purge");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.bulk_operation")).isZero();

      Cli.Result r =
          Cli.run(on(db, "purge", "--queue", "test", "--actor", "mina", "--reason", "load test"));
      assertThat(r.exitCode()).as("refusals exit 1: " + r).isEqualTo(1);
      assertThat(r.out())
          .startsWith("purged (bulk action 1): 2 of 4 matching items")
          .contains("1 not done or cancelled, 1 ended within");
      assertThat(
              db.queryString("SELECT string_agg(work_id, ',' ORDER BY work_id) FROM {schema}.work"))
          .isEqualTo("prod-1,test-failed,test-new");
      assertThat(
              db.queryString(
                  "SELECT string_agg(work_id || ' ' || actor || ' ' || reason, ','"
                      + " ORDER BY work_id) FROM {schema}.purge_item_audit"))
          .isEqualTo("test-1 mina load test,test-2 mina load test");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(2);
      Cli.Result again =
          Cli.run(
              on(
                  db,
                  "enqueue",
                  "--id",
                  "test-1",
                  "--kind",
                  "mail",
                  "--payload",
                  "{\"id\": \"test-1\"}"));
      assertThat(again.exitCode()).as(again.toString()).isZero();
      assertThat(again.out()).contains("already");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(3);
    }
  }
}
