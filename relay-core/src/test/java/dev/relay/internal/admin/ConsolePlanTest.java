package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.KindPolicy;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The plans of every statement the console (and {@code relay status}) runs, on a schema that holds
 * mostly finished work, as a long-lived one does: most of it in the history table, by day, where
 * workers move what they complete or cancel, and some in the work table (left by an older worker,
 * or cancelled by an operator). Each reads through an index and none scans the whole work table or
 * the history table. Asserted on EXPLAIN ANALYZE output, not on timings; later performance work
 * keeps these green.
 */
@RelayDatabaseTest
class ConsolePlanTest {
  private static final long HOUR_MS = 3_600_000L;

  private TestDatabase db;
  private AdminSql sql;

  /** Fills this test's schema (each test has its own). */
  private void fill(TestDatabase db) throws SQLException {
    this.db = db;
    this.sql = new AdminSql(SchemaName.of(db.schema()));
    // 30,000 done and 2,000 cancelled over the last 30 days (the bulk), as a table that an older
    // release filled; as many in the history table, by day, where workers of this release move
    // what they complete or cancel: every UTC day from 30 days ago to today whole (today's rest
    // completed "later", which no plan here reads), so that no partition holds the few rows of a
    // part of a day, which the planner rightly reads whole and the row bounds would count
    // (whatever the time of day the test runs at); then the unfinished and failed work an overview
    // is about:
    // 2,000 ready, 500 delayed, 200 running, 500 failed.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,
                                     claim_generation, attempts, first_attempt_at, outcome)
        SELECT 'done-' || g, 'k' || (g % 3), '{}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds'
                   + interval '2 seconds',
               1, 1, clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               CASE WHEN g % 10 = 0 THEN 'unknown' ELSE 'delivered' END
          FROM generate_series(1, 30000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at)
        SELECT 'cancelled-' || g, 'k' || (g % 3), '{}', 'cancelled',
               clock_timestamp() - interval '20 days' + g * interval '10 minutes',
               clock_timestamp() - interval '20 days' + g * interval '10 minutes'
          FROM generate_series(1, 2000) g;
        SELECT {schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)
          FROM generate_series(1, 31) AS d;
        INSERT INTO {schema}.work_history (work_id, kind, payload, state, created_at, completed_at,
                                           claim_generation, attempts, first_attempt_at, outcome)
        SELECT 'finished-' || g, 'k' || (g % 3), '{}', 'done',
               day0 + g * interval '86 seconds',
               day0 + g * interval '86 seconds' + interval '2 seconds',
               1, 1, day0 + g * interval '86 seconds', 'delivered'
          FROM generate_series(1, 31140) g,
               (SELECT ((clock_timestamp() AT TIME ZONE 'UTC')::date - 30)::timestamp
                           AT TIME ZONE 'UTC' AS day0) d0;
        INSERT INTO {schema}.work_history (work_id, kind, payload, state, created_at, completed_at)
        SELECT 'withdrawn-' || g, 'k' || (g % 3), '{}', 'cancelled',
               clock_timestamp() - interval '20 days' + g * interval '10 minutes',
               clock_timestamp() - interval '20 days' + g * interval '10 minutes'
          FROM generate_series(1, 2000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at, created_at)
        SELECT 'ready-' || g, 'k' || (g % 3), '{}', clock_timestamp() - g * interval '1 second',
               clock_timestamp() - g * interval '1 second'
          FROM generate_series(1, 2000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)
        SELECT 'delayed-' || g, 'k1', '{}', clock_timestamp() + interval '1 day'
          FROM generate_series(1, 500) g;
        -- inserted ready, then claimed (only a local hand-off inserts a claim)
        INSERT INTO {schema}.outbox (work_id, kind, payload)
        SELECT 'running-' || g, 'k' || (g % 3), '{}' FROM generate_series(1, 200) g;
        UPDATE {schema}.outbox
           SET state = 'running', claimed_by = 'worker-' || (substr(work_id, 9)::int % 4),
               lease_until = clock_timestamp()
                             + (substr(work_id, 9)::int % 5 - 1) * interval '1 minute',
               claimed_at = clock_timestamp(), claim_generation = 1, attempts = 1,
               first_attempt_at = clock_timestamp()
         WHERE work_id LIKE 'running-%';
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,
                                     claim_generation, attempts, first_attempt_at,
                                     last_error_kind, last_error, ordering_key, sequence)
        SELECT 'failed-' || g, 'k' || (g % 3), '{}', 'failed',
               clock_timestamp() - g * interval '1 minute',
               clock_timestamp() - g * interval '1 minute', 3, 3,
               clock_timestamp() - g * interval '1 minute',
               'http_' || (500 + g % 5), 'boom',
               CASE WHEN g % 2 = 0 THEN 'key-' || g END, CASE WHEN g % 2 = 0 THEN 1 END
          FROM generate_series(1, 500) g;
        INSERT INTO {schema}.attempt (work_id, generation, worker, claimed_at, ending, error_kind)
        SELECT 'failed-' || (g % 500 + 1), g / 500 + 1, 'worker-1', clock_timestamp(), 'retry',
               'http_500'
          FROM generate_series(0, 1499) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.work_history;
        ANALYZE {schema}.attempt;
        """);
    try (Connection c = db.connection()) {
      new HealthQueries(
              sql,
              RollupSql.of(SchemaName.of(db.schema())),
              dev.relay.internal.jdbc.Timeouts.DEFAULT,
              new PauseOperation(
                  SchemaName.of(db.schema()), dev.relay.internal.jdbc.Timeouts.DEFAULT))
          .refreshSummary(c);
    }
    db.execute("ANALYZE {schema}.finished_summary;");
  }

  @Test
  void overviewCountsReadThePartialIndexesAndTheSummaryNeverTheWholeTable(TestDatabase db)
      throws Exception {
    fill(db);
    String text =
        plan(
            sql.health,
            ps -> {
              ps.setObject(1, OffsetDateTime.now());
              ps.setArray(2, ps.getConnection().createArrayOf("text", new String[] {"default"}));
              ps.setArray(3, ps.getConnection().createArrayOf("text", new String[] {"k1"}));
            });
    assertNoWorkTableScan(text);
    // ready and running through the claim index; failed from the index of failed counts (V23),
    // index-only where the pages are all-visible; done and cancelled from the summary; nothing of
    // the done work
    assertThat(text).as(text).contains("outbox_claim_idx");
    assertThat(text).as(text).contains("Index Only Scan using outbox_failed_counts_idx");
    assertThat(text).as(text).contains("finished_summary");
    // No scan of the work table produces more rows than the unfinished and failed work.
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(3_500);
  }

  @Test
  void theWindowsLiveRangesReadOnlyTheirRangesOfTheFinishedIndex(TestDatabase db) throws Exception {
    fill(db);
    OffsetDateTime now = OffsetDateTime.now();
    for (String q : List.of(sql.windowLive, sql.minutesLive)) {
      // Without a fold: the whole hour from the table (~45 done and ~60 failed rows).
      String whole = plan(q, live(now, now.plusSeconds(1), now.plusSeconds(1), ""));
      assertNoWorkTableScan(whole);
      assertThat(whole).as(whole).contains("outbox_finished_idx");
      assertThat(Plans.maxWorkTableRows(whole)).as(whole).isLessThan(500);
      // Behind a fold: under a minute at the window's start, two minutes after the position.
      String split = plan(q, live(now, now.minusMinutes(59), now.minusMinutes(2), "done-1"));
      assertNoWorkTableScan(split);
      assertThat(split).as(split).contains("outbox_finished_idx");
      assertThat(Plans.maxWorkTableRows(split)).as(split).isLessThan(20);
      // The history table: only the partitions of the window's days (today's, and yesterday's
      // just after midnight), a range of their index of completion; the days before are pruned.
      assertThat(whole).as(whole).containsPattern("work_history_\\d{8}_completed_at_work_id_idx");
      for (String text : List.of(whole, split)) {
        assertThat(text).as(text).doesNotContain(partition(now.minusDays(2)));
      }
    }
  }

  /** The name of the history table's partition of {@code t}'s UTC day. */
  private static String partition(OffsetDateTime t) {
    return "work_history_"
        + t.withOffsetSameInstant(java.time.ZoneOffset.UTC)
            .format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd"));
  }

  /**
   * Binds the live ranges of the hour to {@code now}: the head up to {@code headEnd}, the tail
   * after {@code (after, id)}.
   */
  private static Plans.Binder live(
      OffsetDateTime now, OffsetDateTime headEnd, OffsetDateTime after, String id) {
    return ps -> {
      ps.setObject(1, now.minusHours(1));
      ps.setObject(2, headEnd);
      ps.setObject(3, after);
      ps.setObject(4, after);
      ps.setString(5, id);
      ps.setObject(6, now);
    };
  }

  @Test
  void theWindowsRollupReadsNeverTouchTheWorkTable(TestDatabase db) throws Exception {
    fill(db);
    RollupSql rollup = RollupSql.of(SchemaName.of(db.schema()));
    OffsetDateTime from = OffsetDateTime.now().minusHours(1);
    String totals =
        plan(
            rollup.windowTotals,
            ps -> {
              ps.setInt(1, 60);
              ps.setObject(2, from);
            });
    assertThat(totals).as(totals).doesNotContain(" on outbox").contains("rollup");
    String minutes = plan(rollup.windowMinutes, ps -> ps.setObject(1, from));
    assertThat(minutes).as(minutes).doesNotContain(" on outbox").contains("rollup");
  }

  @Test
  void failureGroupsReadOnlyFailedWork(TestDatabase db) throws Exception {
    fill(db);
    String text = plan(sql.failureGroups, ps -> ps.setInt(1, 1_000));
    assertNoWorkTableScan(text);
    assertThat(text).as(text).contains("Index Only Scan using outbox_failed_counts_idx");
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThanOrEqualTo(500);
  }

  @Test
  void theKindsPageReadsTheSmallPolicyTablesOnly(TestDatabase db) throws Exception {
    fill(db);
    String text = plan(sql.kinds, ps -> {});
    assertNoWorkTableScan(text);
    assertThat(text).as(text).doesNotContain(" on outbox");
  }

  @Test
  void theFirstPageOfTheListUsesAnIndexForEveryFilter(TestDatabase db) throws Exception {
    fill(db);
    Map<String, Object[]> filters = new LinkedHashMap<>();
    // state, kind, queue, key, older_ms, newer_ms, error_kind, outcome
    filters.put("none", new Object[8]);
    filters.put("state", new Object[] {"failed", null, null, null, null, null, null, null});
    filters.put("ready", new Object[] {"ready", null, null, null, null, null, null, null});
    filters.put("running", new Object[] {"running", null, null, null, null, null, null, null});
    filters.put(
        "ready of a kind", new Object[] {"ready", "k2", null, null, null, null, null, null});
    filters.put(
        "ready in a queue", new Object[] {"ready", null, "default", null, null, null, null, null});
    filters.put("done", new Object[] {"done", null, null, null, null, null, null, null});
    filters.put("cancelled", new Object[] {"cancelled", null, null, null, null, null, null, null});
    filters.put("kind", new Object[] {null, "k2", null, null, null, null, null, null});
    filters.put("queue", new Object[] {null, null, "default", null, null, null, null, null});
    filters.put("key", new Object[] {null, null, null, "key-42", null, null, null, null});
    filters.put("older", new Object[] {null, null, null, null, HOUR_MS, null, null, null});
    filters.put("newer", new Object[] {null, null, null, null, null, HOUR_MS, null, null});
    filters.put("error", new Object[] {null, null, null, null, null, null, "http_502", null});
    filters.put("outcome", new Object[] {null, null, null, null, null, null, null, "unknown"});
    filters.put(
        "failed of a kind",
        new Object[] {"failed", "k1", null, null, null, null, "http_501", null});
    for (Map.Entry<String, Object[]> e : filters.entrySet()) {
      Object[] v = e.getValue();
      // the statement WorkQueries picks for the filter
      boolean backlog = "ready".equals(v[0]) || "running".equals(v[0]);
      Plans.BranchBinder branch =
          (ps, p) -> {
            for (int i = 0; i < 8; i++) {
              for (int twice = 0; twice < 2; twice++, p++) {
                if (v[i] instanceof Long l) {
                  ps.setLong(p, l);
                } else if (i == 4 || i == 5) {
                  ps.setNull(p, Types.BIGINT);
                } else {
                  ps.setString(p, (String) v[i]);
                }
              }
            }
            ps.setNull(p++, Types.VARCHAR); // blocked: BlockedPlanTest
            ps.setNull(p++, Types.VARCHAR);
            ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
            ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
            ps.setNull(p++, Types.VARCHAR);
            ps.setNull(p++, Types.ARRAY);
            ps.setNull(p++, Types.ARRAY);
            ps.setInt(p++, 51);
            return p;
          };
      String text =
          plan(
              backlog ? sql.listBacklog : sql.listWork,
              backlog ? ps -> branch.bind(ps, 1) : Plans.page(51, branch));
      assertNoWorkTableScan(text);
      assertThat(text).as(e.getKey() + "\n" + text).containsPattern("Index (Only )?Scan using");
      if (backlog) {
        // Ready and running work is the newest, and no index orders it by creation: walking
        // outbox_created_idx from the oldest row would pass the 32,000 finished rows first. It is
        // read through the claim index instead (ready and running rows only) and sorted: at most
        // the 2,700 unfinished rows, whatever the table holds.
        // (running work alone may come through the other partial indexes of running work)
        assertThat(text)
            .as(e.getKey() + "\n" + text)
            .containsPattern("outbox_(claim|claimed_by|running_group)_idx");
        assertThat(text).as(e.getKey() + "\n" + text).doesNotContain("outbox_created_idx");
        assertThat(Plans.maxWorkTableRows(text)).as(e.getKey() + "\n" + text).isLessThan(3_000);
      } else if (e.getKey().equals("cancelled")) {
        // Finished work is most of each table: the list walks the creation order of each and
        // stops after a page, never sorting all cancelled work (the merge of the two branches
        // is no sort). How far it walks follows where the oldest cancelled rows lie (here after
        // 11,000 done rows; in the 5M bench, evenly spread).
        assertThat(text)
            .as(e.getKey() + "\n" + text)
            .contains("Index Scan using outbox_created_idx")
            .containsPattern("Index Scan using work_history_\\d{8}_created_at_work_id_idx")
            .doesNotContainPattern("Sort \\(actual");
      } else if (e.getKey().equals("error") || e.getKey().equals("outcome")) {
        // Each table through its partial index of the criterion (V9 for the work table, V25 for
        // each day of the history table).
        assertThat(text)
            .as(e.getKey() + "\n" + text)
            .containsPattern("outbox_(error_kind|doubtful_outcome)_idx")
            .containsPattern(
                "work_history_\\d{8}_(last_error_kind|outcome)_created_at_work_id_idx");
        assertThat(Plans.maxWorkTableRows(text)).as(e.getKey() + "\n" + text).isLessThan(1_200);
      } else {
        // A page reads about a page of rows, not the table (or the whole created-order index).
        assertThat(Plans.maxWorkTableRows(text)).as(e.getKey() + "\n" + text).isLessThan(1_000);
      }
    }
  }

  @Test
  void listingDoneWorkNeverWalksTheBacklogOfTheWorkTable(TestDatabase db) throws Exception {
    // The steady state of this release: done work in the history table, the work table a
    // backlog of ready work (and a little done work an older worker left).
    this.db = db;
    this.sql = new AdminSql(SchemaName.of(db.schema()));
    db.execute(
        """
        SELECT {schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)
          FROM generate_series(1, 31) AS d;
        INSERT INTO {schema}.work_history (work_id, kind, payload, state, created_at, completed_at,
                                           claim_generation, attempts)
        SELECT 'finished-' || g, 'k', '{}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds', 1, 1
          FROM generate_series(1, 30000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,
                                     claim_generation, attempts)
        SELECT 'left-' || g, 'k', '{}', 'done', clock_timestamp() - g * interval '1 minute',
               clock_timestamp() - g * interval '1 minute', 1, 1
          FROM generate_series(1, 20) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, created_at)
        SELECT 'ready-' || g, 'k', '{}', clock_timestamp() - interval '40 days' + g * interval '1 minute'
          FROM generate_series(1, 20000) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.work_history;
        """);
    String text =
        plan(
            sql.listWork,
            Plans.page(
                51,
                (ps, p) -> {
                  ps.setString(p++, "done");
                  ps.setString(p++, "done");
                  for (int i = 0; i < 6; i++) {
                    ps.setNull(p++, Types.VARCHAR);
                  }
                  for (int i = 0; i < 4; i++) {
                    ps.setNull(p++, Types.BIGINT);
                  }
                  for (int i = 0; i < 6; i++) {
                    ps.setNull(p++, Types.VARCHAR);
                  }
                  ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
                  ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
                  ps.setNull(p++, Types.VARCHAR);
                  ps.setNull(p++, Types.ARRAY);
                  ps.setNull(p++, Types.ARRAY);
                  ps.setInt(p++, 51);
                  return p;
                }));
    assertNoWorkTableScan(text);
    // Each table's branch is planned on its own statistics: the work table's few done rows come
    // through the index of finished work, not by walking 20,000 ready rows in creation order
    // (which is what one merged walk of the work view did).
    assertThat(text).as(text).contains("outbox_finished_idx");
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(1_000);
  }

  @Test
  void theFoldReadsBothTablesInItsOrderAndStopsAtItsLimit(TestDatabase db) throws Exception {
    fill(db);
    RollupSql rollup = RollupSql.of(SchemaName.of(db.schema()));
    OffsetDateTime now = OffsetDateTime.now();
    OffsetDateTime position = now.minusDays(10);
    String text =
        plan(
            rollup.foldBatch,
            ps -> {
              int i = 1;
              for (int b = 0; b < RollupSql.FOLD_BRANCHES; b++) {
                ps.setObject(i++, position);
                ps.setObject(i++, position);
                ps.setString(i++, "");
                ps.setObject(i++, now.minusMinutes(1));
                ps.setInt(i++, 500);
              }
              ps.setInt(i, 500);
            });
    assertNoWorkTableScan(text);
    assertThat(text).as(text).contains("outbox_finished_idx");
    // in (completed_at, work_id) order from the position: the days before it are pruned
    assertThat(text)
        .as(text)
        .containsPattern("work_history_\\d{8}_completed_at_work_id_idx")
        .doesNotContain(partition(position.minusDays(1)));
    // each branch stops at the limit, whatever lies after the position (20,000 rows here)
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(1_000);
  }

  @Test
  void showAndTheRedrivePreviewFindTheirRowsByKey(TestDatabase db) throws Exception {
    fill(db);
    String id = "failed-42";
    // failed work in the work table, done work in the history table: both by key, in each table
    // (and each partition of the history table)
    for (String shown : List.of(id, "finished-41")) {
      String row = plan(sql.showWork, ps -> ps.setString(1, shown));
      assertNoWorkTableScan(row);
      assertThat(row)
          .as(row)
          .contains("outbox_pkey")
          .containsPattern("work_history_\\d+_work_id_idx");
      assertThat(Plans.maxWorkTableRows(row)).as(row).isLessThanOrEqualTo(1);
      String preview =
          plan(
              sql.previewHorizon,
              ps -> {
                ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
                ps.setString(2, shown);
              });
      assertNoWorkTableScan(preview);
      assertThat(preview)
          .as(preview)
          .contains("outbox_pkey")
          .containsPattern("work_history_\\d+_work_id_idx");
      assertThat(Plans.maxWorkTableRows(preview)).as(preview).isLessThanOrEqualTo(1);
    }
    String attempts = plan(sql.showAttempts, ps -> ps.setString(1, id));
    assertThat(attempts).as(attempts).contains("attempt_work_idx").doesNotContain("Seq Scan");
    for (String q :
        List.of(sql.showRedrives, sql.showCancels, sql.showSupersedes, sql.showSupersededBy)) {
      assertNoWorkTableScan(plan(q, ps -> ps.setString(1, id)));
    }
    // the redrive's own read, after it locked the row in the work table
    String horizon =
        plan(
            sql.horizon,
            ps -> {
              ps.setLong(1, KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis());
              ps.setString(2, id);
            });
    assertNoWorkTableScan(horizon);
    assertThat(horizon).as(horizon).contains("outbox_pkey").doesNotContain(" on work_history");
  }

  private static void assertNoWorkTableScan(String text) {
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
  }

  private String plan(String query, Plans.Binder binder) throws SQLException {
    return Plans.explain(db, query, binder);
  }
}
