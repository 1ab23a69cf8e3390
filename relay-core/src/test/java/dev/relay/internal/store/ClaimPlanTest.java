package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Relay;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The claim's plan on a large table: it walks the partial claim index in claim order and stops
 * after its batch (of 10 or the default ceiling), so future-dated rows are never read, and the
 * ordering gate probes the partial key index. Asserted on EXPLAIN ANALYZE output, not on timings.
 */
@RelayDatabaseTest
class ClaimPlanTest {
  @Test
  void claimUsesThePartialIndexesAndNeverVisitsFutureDatedRows(TestDatabase db) throws Exception {
    String s = db.schema();
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at, created_at)
        SELECT 'ready-' || g, 'k', '{}', clock_timestamp() - interval '1 hour' + g * interval '1 ms',
               clock_timestamp()
          FROM generate_series(1, 100000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)
        SELECT 'future-' || g, 'k', '{}', clock_timestamp() + interval '1 day'
          FROM generate_series(1, 10000) g;
        -- 1,000 blocked keys: a failed head and a ready successor each, older than the rest.
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, available_at, ordering_key,
                                     sequence, completed_at)
        SELECT 'head-' || g, 'k', '{}', 'failed', clock_timestamp() - interval '2 hours',
               'key-' || g, 1, clock_timestamp()
          FROM generate_series(1, 1000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at, ordering_key, sequence)
        SELECT 'next-' || g, 'k', '{}', clock_timestamp() - interval '2 hours', 'key-' || g, 2
          FROM generate_series(1, 1000) g;
        ANALYZE {schema}.outbox;
        """);
    String claim = new WorkSql(SchemaName.of(s)).claimBatch;
    // A small claim and the default ceiling (what a claim takes in a backlog): the plan must not
    // change shape as the limit grows. (At 1,000 rows against this table's 112,000, PostgreSQL 18
    // hash-joins the whole table into the update: see docs/performance.md, "Larger claims".)
    for (int limit : new int[] {10, Relay.DEFAULT_BATCH_SIZE}) {
      String text = claimPlan(db, claim, limit);
      assertThat(text).as(text).contains("outbox_claim_idx").contains("outbox_key_sequence_idx");
      assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
      // The one sort is of the returned batch (at most the limit), to hand rows back in claim
      // order; the eligible rows themselves are read in index order, never sorted.
      assertThat(text.split("Sort Method", -1)).as(text).hasSize(2);
      assertThat(text).as(text).startsWith("Sort").contains("Sort Key: updated.priority DESC");
      // Every row the claim index scan produced or filtered: the batch, plus the 1,000 blocked
      // successors it had to pass; never the 10,000 future-dated rows or the whole table.
      long visited = 0;
      Matcher m =
          Pattern.compile(
                  "Index Scan using outbox_claim_idx[^\\n]*actual rows=(\\d+)[\\s\\S]*?"
                      + "(?:Rows Removed by Filter: (\\d+))?")
              .matcher(text);
      assertThat(m.find()).as(text).isTrue();
      visited += Long.parseLong(m.group(1));
      if (m.group(2) != null) {
        visited += Long.parseLong(m.group(2));
      }
      assertThat(visited).as(text).isLessThan(limit + 2_000L);
      // With no pause, the pause test is one probe of the empty pause table per statement: the
      // per-row subquery is never executed.
      assertThat(text)
          .as(text)
          .containsPattern("Seq Scan on pause \\(actual rows=0[.0-9]* loops=1\\)");
      assertThat(text).as(text).containsPattern("on pause ps \\(never executed\\)");
    }
  }

  /** EXPLAIN ANALYZE of one claim of {@code limit} rows of kind {@code k}, rolled back. */
  private static String claimPlan(TestDatabase db, String claim, int limit) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + claim)) {
        ps.setString(1, "default");
        ps.setArray(2, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(3, limit);
        ps.setString(4, "planner");
        ps.setLong(5, 60_000);
        ps.setString(6, "planner");
        return lines(ps);
      } finally {
        c.rollback();
      }
    }
  }

  @Test
  void claimOfRetriedWorkJudgesTheHorizonWithoutLeavingTheClaimIndex(TestDatabase db)
      throws Exception {
    // Issue 23: every claim decides the kind's deduplication horizon. Retried rows (a first
    // attempt recorded) read their kind's horizon; the scan stays on the partial claim index and
    // stops after the batch.
    String s = db.schema();
    db.execute(
        """
        INSERT INTO {schema}.kind (kind, backoff_base, backoff_cap, max_attempts, max_elapsed,
                                   handler_timeout, dedup_horizon, unknown_outcome, registered_by)
        VALUES ('k', '1 s', '5 min', 25, '30 min', '1 h', '1 h', 'retry', 'planner');
        -- inserted new, then given their first attempt (work is only inserted at generation 0)
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)
        SELECT 'retry-' || g, 'k', '{}', clock_timestamp() - interval '1 hour' + g * interval '1 ms'
          FROM generate_series(1, 100000) g;
        UPDATE {schema}.outbox
           SET attempts = 1, claim_generation = 1,
               first_attempt_at = clock_timestamp()
                                  - CASE WHEN substr(work_id, 7)::int % 2 = 0
                                         THEN interval '2 hours' ELSE interval '10 minutes' END;
        ANALYZE {schema}.outbox;
        """);
    String claim = new WorkSql(SchemaName.of(s)).claimBatch;
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + claim)) {
        ps.setString(1, "default");
        ps.setArray(2, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(3, 10);
        ps.setString(4, "planner");
        ps.setLong(5, 60_000);
        ps.setString(6, "planner");
        text = lines(ps);
      }
      c.rollback();
    }
    assertThat(text).as(text).contains("Index Scan using outbox_claim_idx");
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    String scan = text.substring(text.indexOf("Index Scan using outbox_claim_idx"));
    assertThat(scan).as(text).containsPattern("actual rows=10[. ]");
  }

  @Test
  void aClaimOverSeveralQueuesReadsEachQueueInClaimOrderAndStops(TestDatabase db) throws Exception {
    // Before, = ANY over the queues made PostgreSQL read every eligible row of both and sort them
    // (a sequential scan of the table, 400 ms a claim at 500,000 rows).
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, queue, available_at)
        SELECT 'w-' || g, 'k', '{}', CASE WHEN g % 5 = 0 THEN 'sms' ELSE 'mail' END,
               clock_timestamp() - interval '1 hour' + g * interval '1 ms'
          FROM generate_series(1, 100000) g;
        ANALYZE {schema}.outbox;
        """);
    String claim = new WorkSql(SchemaName.of(db.schema())).claimBatchQueues;
    int limit = Relay.DEFAULT_BATCH_SIZE;
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + claim)) {
        ps.setArray(1, c.createArrayOf("text", new String[] {"mail", "sms"}));
        ps.setArray(2, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(3, limit);
        ps.setInt(4, limit);
        ps.setString(5, "planner");
        ps.setLong(6, 60_000);
        ps.setString(7, "planner");
        text = lines(ps);
      } finally {
        c.rollback();
      }
    }
    // (The update's join to the work table is the single-queue claim's: at this table's 200 rows
    // per claimed row the planner may hash it, see docs/performance.md, "Larger claims".)
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox o ");
    // one index scan per queue, each stopping after at most the batch
    Matcher m =
        Pattern.compile(
                "Index Scan using outbox_claim_idx on outbox o \\(actual rows=([0-9.]+) loops=2\\)")
            .matcher(text);
    assertThat(m.find()).as(text).isTrue();
    assertThat(Double.parseDouble(m.group(1))).as(text).isLessThanOrEqualTo(limit);
    assertThat(text).as(text).containsPattern("Index Cond: \\(\\(queue = q.name\\)");
    // the sorts are of at most the batch per queue and of the batch handed back, never of the
    // 100,000 eligible rows
    Matcher sorts = Pattern.compile("Sort \\(actual rows=([0-9.]+) loops=1\\)").matcher(text);
    int found = 0;
    while (sorts.find()) {
      found++;
      assertThat(Double.parseDouble(sorts.group(1))).as(text).isLessThanOrEqualTo(2.0 * limit);
    }
    assertThat(found).as(text).isEqualTo(2);
  }

  @Test
  void resumedClaimStartsItsIndexScanAfterThePosition(TestDatabase db) throws Exception {
    String s = db.schema();
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)
        SELECT 'w-' || lpad(g::text, 6, '0'), 'k', '{}',
               timestamptz '2026-01-01 00:00:00+00' + g * interval '1 ms'
          FROM generate_series(1, 20000) g;
        ANALYZE {schema}.outbox;
        """);
    String claim = new WorkSql(SchemaName.of(s)).claimBatchResume;
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + claim)) {
        ps.setString(1, "default");
        ps.setInt(2, 0);
        ps.setObject(3, java.time.OffsetDateTime.parse("2026-01-01T00:00:15Z")); // row 15,000
        ps.setString(4, "w-015000");
        ps.setArray(5, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(6, 10);
        ps.setString(7, "planner");
        ps.setLong(8, 60_000);
        ps.setString(9, "planner");
        text = lines(ps);
      }
      c.rollback();
    }
    // The position is part of the index condition: the 15,000 rows before it are never read.
    assertThat(text).as(text).contains("Index Scan using outbox_claim_idx");
    String scan = text.substring(text.indexOf("Index Scan using outbox_claim_idx"));
    scan = scan.substring(0, scan.indexOf("SubPlan"));
    assertThat(scan).as(text).containsPattern("Index Cond: \\(.*ROW\\(available_at, work_id\\) >");
    // "rows=10" before PostgreSQL 18, "rows=10.00" from 18 on
    assertThat(scan).as(text).containsPattern("actual rows=10[. ]");
    assertThat(scan).as(text).doesNotContain("Rows Removed by Filter");
  }

  @Test
  void aResumedClaimOverSeveralQueuesStartsEachQueuesScanAfterThePosition(TestDatabase db)
      throws Exception {
    // A held xmin horizon keeps the entries of every row taken before the position: a worker of
    // several queues must not walk them on each claim either.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, queue, available_at)
        SELECT 'w-' || lpad(g::text, 6, '0'), 'k', '{}',
               CASE WHEN g % 2 = 0 THEN 'sms' ELSE 'mail' END,
               timestamptz '2026-01-01 00:00:00+00' + g * interval '1 ms'
          FROM generate_series(1, 40000) g;
        ANALYZE {schema}.outbox;
        """);
    String claim = new WorkSql(SchemaName.of(db.schema())).claimBatchQueuesResume;
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + claim)) {
        ps.setArray(1, c.createArrayOf("text", new String[] {"mail", "sms"}));
        ps.setInt(2, 0);
        ps.setObject(3, java.time.OffsetDateTime.parse("2026-01-01T00:00:30Z")); // row 30,000
        ps.setString(4, "w-030000");
        ps.setArray(5, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(6, 10);
        ps.setInt(7, 10);
        ps.setString(8, "planner");
        ps.setLong(9, 60_000);
        ps.setString(10, "planner");
        text = lines(ps);
      } finally {
        c.rollback();
      }
    }
    // The position is part of each queue's index condition: the 15,000 rows of each queue before
    // it are never read, and each scan stops after the batch.
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox o ");
    String scan = text.substring(text.indexOf("Index Scan using outbox_claim_idx on outbox o "));
    scan = scan.substring(0, scan.indexOf("SubPlan"));
    assertThat(scan).as(text).contains("loops=2)");
    assertThat(scan)
        .as(text)
        .containsPattern("Index Cond: \\(\\(queue = q.name\\).*ROW\\(available_at, work_id\\) >");
    assertThat(scan).as(text).containsPattern("actual rows=10[. ]");
    assertThat(scan).as(text).doesNotContain("Rows Removed by Filter");
  }

  @ParameterizedTest(name = "{0} queue(s)")
  @ValueSource(ints = {1, 2})
  void aLimitedClaimReadsEachQueueInClaimOrderAndStops(int queues, TestDatabase db)
      throws Exception {
    // A limited kind's pool is read as the ordinary claim's is: before, a claim over several
    // queues read every eligible row of them and sorted it.
    db.execute(
        """
        INSERT INTO {schema}.limiter (kind, max_running, registered_by)
        VALUES ('k', 100000, 'planner');
        INSERT INTO {schema}.outbox (work_id, kind, payload, queue, available_at)
        SELECT 'w-' || g, 'k', '{}', CASE WHEN g % 5 = 0 THEN 'sms' ELSE 'mail' END,
               clock_timestamp() - interval '1 hour' + g * interval '1 ms'
          FROM generate_series(1, 100000) g;
        ANALYZE {schema}.outbox;
        """);
    WorkSql sql = new WorkSql(SchemaName.of(db.schema()));
    int limit = Relay.DEFAULT_BATCH_SIZE;
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement(EXPLAIN + (queues == 1 ? sql.claimLimited : sql.claimLimitedQueues))) {
        int i = 1;
        ps.setArray(i++, c.createArrayOf("text", new String[] {"k"}));
        if (queues == 1) {
          ps.setString(i++, "mail");
        } else {
          ps.setArray(i++, c.createArrayOf("text", new String[] {"mail", "sms"}));
        }
        ps.setArray(i++, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(i++, limit);
        if (queues > 1) {
          ps.setInt(i++, limit);
        }
        ps.setString(i++, "planner");
        ps.setLong(i++, 60_000);
        ps.setString(i, "planner");
        text = lines(ps);
      } finally {
        c.rollback();
      }
    }
    assertThat(text).as(text).containsPattern("Update on outbox j\\S* \\(actual rows=" + limit);
    // the pool: one index scan per queue in claim order, each stopping after at most the batch
    Matcher m =
        Pattern.compile(
                "Index Scan using outbox_claim_idx on outbox o\\S* \\(actual rows=([0-9.]+)"
                    + " loops="
                    + queues
                    + "\\)")
            .matcher(text);
    assertThat(m.find()).as(text).isTrue();
    assertThat(Double.parseDouble(m.group(1))).as(text).isLessThanOrEqualTo(limit);
    // no sort of the 100,000 eligible rows: every sort is of at most a batch per queue
    Matcher sorts = Pattern.compile("Sort \\(actual rows=([0-9.]+) loops=").matcher(text);
    while (sorts.find()) {
      assertThat(Double.parseDouble(sorts.group(1))).as(text).isLessThanOrEqualTo(2.0 * limit);
    }
  }

  @ParameterizedTest(name = "{0} outcomes")
  @ValueSource(ints = {100, Relay.DEFAULT_COMPLETION_BATCH_SIZE})
  void settlementFindsItsRowsByPrimaryKeyWhateverTheStatisticsSay(int n, TestDatabase db)
      throws Exception {
    String s = db.schema();
    // Statistics taken while nothing runs: the planner believes this worker holds no rows. (On a
    // small table a sequential scan and a hash join are as good, and the planner may take them.)
    // The second case is a full completion batch of the default size.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload)
        SELECT 'w-' || lpad(g::text, 6, '0'), 'k', '{}' FROM generate_series(1, 100000) g;
        ANALYZE {schema}.outbox;
        UPDATE {schema}.outbox SET state = 'running', claimed_by = 'worker-a',
               claim_generation = 1, attempts = 1, lease_until = clock_timestamp() + interval '1 h'
         WHERE work_id <= 'w-%06d';
        """
            .formatted(2 * n));
    String settle = new WorkSql(SchemaName.of(s)).settleIfOwned;
    String[] ids = new String[n];
    Long[] generations = new Long[n];
    String[] actions = new String[n];
    Long[] delays = new Long[n];
    for (int i = 0; i < n; i++) {
      ids[i] = String.format("w-%06d", i + 1);
      generations[i] = 1L;
      // snoozes read the kind's cap and the row's count: the plan must not change for them
      actions[i] = i % 2 == 0 ? "complete" : "snooze";
      delays[i] = 0L;
    }
    String text;
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + settle)) {
        ps.setArray(1, c.createArrayOf("text", ids));
        ps.setArray(2, c.createArrayOf("int8", generations));
        ps.setArray(3, c.createArrayOf("text", actions));
        ps.setArray(4, c.createArrayOf("int8", delays));
        for (int i = 5; i <= 10; i++) {
          ps.setArray(i, c.createArrayOf("text", new String[n]));
        }
        ps.setString(11, "worker-a");
        text = lines(ps);
      }
      c.rollback();
    }
    // the snoozes stay in the work table; the completions move to the history table
    int half = n / 2;
    assertThat(text).as(text).containsPattern("Update on outbox o\\S* \\(actual rows=" + half);
    assertThat(text).as(text).containsPattern("Delete on outbox o\\S* \\(actual rows=" + half);
    assertThat(text).as(text).contains("Insert on work_history");
    // Each input row probes the primary key, in the update and in the move alike; the rows this
    // worker holds are not each compared with every input row.
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    assertThat(
            Pattern.compile(
                    "Index Scan using outbox_pkey on outbox o\\S* \\(actual rows=1\\S* loops="
                        + half
                        + "\\)")
                .matcher(text)
                .results()
                .count())
        .as(text)
        .isEqualTo(2);
    assertThat(text).as(text).doesNotContain("outbox_claimed_by_idx");
    assertThat(text).as(text).doesNotContain("Rows Removed by Join Filter");
  }

  private static final String EXPLAIN = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ";

  private static String lines(PreparedStatement ps) throws java.sql.SQLException {
    List<String> plan = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        plan.add(rs.getString(1));
      }
    }
    return String.join("\n", plan);
  }
}
