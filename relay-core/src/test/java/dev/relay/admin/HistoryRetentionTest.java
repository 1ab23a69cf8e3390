package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.EnqueueResult;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Retention of the history table (V25) by whole UTC days: the purge retires every day that ended
 * before the longest of the work retention and every deduplication horizon (tombstones written,
 * partition dropped), keeps the others, and rows that waited in the default partition are not
 * forgotten; maintenance creates the days ahead. Old days are made by inserting finished rows
 * straight into the history table (or moving a completed row's completion time back), as the test
 * cannot wait for days to pass.
 */
@RelayDatabaseTest
class HistoryRetentionTest {
  private static final DateTimeFormatter NAME = DateTimeFormatter.ofPattern("yyyyMMdd");

  private TestDatabase db;
  private AdminFixture f;
  private Admin admin;
  private LocalDate today;

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    this.db = db;
    f = new AdminFixture(db.dataSource(), db.schema());
    admin = f.admin;
    today = LocalDate.parse(db.queryString("SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date"));
  }

  @Nested
  class Purge {
    @Test
    void aDayPastRetentionIsRetiredWithATombstonePerItemThatStillGuardsItsId() throws Exception {
      // Work a Relay completes lands in the history table, in today's partition ...
      completeWithRelay("relayed", "{\"id\":\"relayed\"}");
      f.done("recent", "k");
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history")).isEqualTo(2);
      assertThat(f.count("SELECT count(*) FROM {schema}.outbox")).isZero();
      // ... and is made 30 days old, in that day's partition, with three more rows of that day.
      LocalDate old = today.minusDays(30);
      addDay(old);
      noonOf(old, "work_history", "completed_at", "relayed");
      insertDone(old, "old-", 3);
      assertThat(count(old)).isEqualTo(4);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false);

      assertThat(r.historyDays()).isEqualTo(1);
      assertThat(r.work()).isEqualTo(4);
      assertThat(r.complete()).isTrue();
      assertThat(partitionExists(old)).isFalse();
      assertThat(f.query("SELECT * FROM {schema}.tombstone WHERE work_id = 'relayed'"))
          .singleElement()
          .satisfies(
              t ->
                  assertThat(t)
                      .containsEntry("kind", "k")
                      .containsEntry("final_state", "done")
                      .containsEntry("outcome", "delivered")
                      .containsEntry("last_generation", 1L));
      assertThat(f.query("SELECT * FROM {schema}.tombstone WHERE work_id = 'old-2'"))
          .singleElement()
          .satisfies(
              t ->
                  assertThat(t)
                      .containsEntry("final_state", "done")
                      .containsEntry("outcome", "delivered")
                      .containsEntry("last_generation", 2L));
      // Today's day is kept, and with it the recent item.
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history")).isEqualTo(1);
      assertThat(f.row("recent")).containsEntry("state", "done");

      // The tombstone holds the ID: the same intention is a repeat, another one a conflict.
      assertThat(f.enqueue(Work.of("relayed", "k", "{\"id\":\"relayed\"}")))
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThat(f.enqueue(Work.of("old-2", "k", "{\"id\":\"old-2\"}")))
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThatThrownBy(() -> f.enqueue(Work.of("relayed", "k", "{\"id\":\"other\"}")))
          .isInstanceOfSatisfying(
              WorkConflictException.class, e -> assertThat(e.purged()).isTrue());
      assertThat(f.count("SELECT count(*) FROM {schema}.outbox")).isZero();
    }

    @Test
    void aFinishedIdsTombstoneIsWrittenAtCompletionAndOutlivesItsHistoryRow() throws Exception {
      completeWithRelay("relayed", "{\"id\":\"relayed\"}");
      // the move wrote the tombstone, at the completion time
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.tombstone t JOIN {schema}.work_history h"
                      + " USING (work_id) WHERE work_id = 'relayed' AND t.final_state = 'done'"
                      + " AND t.purged_at = h.completed_at"))
          .isEqualTo(1);
      // 30 days ago, with a week of identity horizon and 60 days of work retention: the tombstone
      // is past its horizon, but its history row is kept, so the tombstone stays
      LocalDate old = today.minusDays(30);
      addDay(old);
      noonOf(old, "work_history", "completed_at", "relayed");
      noonOf(old, "tombstone", "purged_at", "relayed");
      PurgePolicy longRetention =
          PurgePolicy.DEFAULT
              .withWorkRetention(Duration.ofDays(60))
              .withIdentityHorizon(Duration.ofDays(7));
      PurgeResult kept = admin.purge(longRetention, false);
      assertThat(kept.historyDays()).isZero();
      assertThat(kept.tombstones()).isZero();
      // the ID is held: the same intention is a repeat judged by the history row, nothing inserted
      assertThat(f.enqueue(Work.of("relayed", "k", "{\"id\":\"relayed\"}")))
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThatThrownBy(() -> f.enqueue(Work.of("relayed", "k", "{\"id\":\"other\"}")))
          .isInstanceOfSatisfying(
              WorkConflictException.class, e -> assertThat(e.purged()).isFalse());
      assertThat(f.count("SELECT count(*) FROM {schema}.outbox")).isZero();

      // with 20 days of work retention the day is retired; then, past its horizon and no longer
      // guarding a history row, the tombstone goes too: the ID is free
      PurgeResult retired =
          admin.purge(longRetention.withWorkRetention(Duration.ofDays(20)), false);
      assertThat(retired.historyDays()).isEqualTo(1);
      assertThat(retired.tombstones()).isEqualTo(1);
      assertThat(f.enqueue(Work.of("relayed", "k", "{\"id\":\"other\"}")))
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ENQUEUED);
    }

    @Test
    void aRowWithoutItsTombstoneGetsOneBeforeItsDayIsDropped() throws Exception {
      LocalDate old = today.minusDays(30);
      addDay(old);
      insertDone(old, "bare-", 3); // written straight into the table: no tombstones
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isZero();

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false);

      assertThat(r.historyDays()).isEqualTo(1);
      assertThat(r.work()).isEqualTo(3);
      assertThat(partitionExists(old)).isFalse();
      assertThat(
              f.count(
                  "SELECT count(*) FROM {schema}.tombstone WHERE work_id LIKE 'bare-%'"
                      + " AND final_state = 'done' AND last_generation = 2"))
          .isEqualTo(3);
    }

    @Test
    void theDryRunCountsTheRowsOfTheDaysItWouldRetireAndChangesNothing() throws Exception {
      LocalDate old = today.minusDays(20);
      addDay(old);
      insertDone(old, "old-", 5);
      // a day that has no partition: its rows wait in the default partition
      insertDone(today.minusDays(21), "stray-", 2);
      insertDone(today.minusDays(3), "kept-", 4);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, true);

      assertThat(r.dryRun()).isTrue();
      assertThat(r.work()).isEqualTo(7);
      assertThat(r.historyDays()).isEqualTo(2);
      assertThat(partitionExists(old)).isTrue();
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history")).isEqualTo(11);
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isZero();
    }

    @Test
    void aDayWithinRetentionIsKept() throws Exception {
      LocalDate recent = today.minusDays(3);
      addDay(recent);
      insertDone(recent, "r-", 2);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false);

      assertThat(r.historyDays()).isZero();
      assertThat(r.work()).isZero();
      assertThat(count(recent)).isEqualTo(2);
      // A shorter retention lets it go.
      assertThat(admin.purge(PurgePolicy.DEFAULT.withWorkRetention(Duration.ofDays(1)), false))
          .extracting(PurgeResult::historyDays, PurgeResult::work)
          .containsExactly(1L, 2L);
      assertThat(partitionExists(recent)).isFalse();
    }

    @Test
    void aDayWithinAnyKindsLongerDeduplicationHorizonIsKept() throws Exception {
      // The day's rows are of kind k; another kind's horizon of 20 days holds the whole day,
      // since a day is retired at once and may hold work of any kind.
      f.registerKind("slow", Duration.ofDays(20));
      LocalDate day = today.minusDays(10);
      addDay(day);
      insertDone(day, "d-", 3);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false);

      assertThat(r.historyDays()).isZero();
      assertThat(count(day)).isEqualTo(3);
      assertThat(admin.purge(PurgePolicy.DEFAULT, true).work()).isZero();

      // Past the horizon too, it goes.
      LocalDate older = today.minusDays(25);
      addDay(older);
      insertDone(older, "o-", 1);
      assertThat(admin.purge(PurgePolicy.DEFAULT, false))
          .extracting(PurgeResult::historyDays, PurgeResult::work)
          .containsExactly(1L, 1L);
      assertThat(partitionExists(older)).isFalse();
      assertThat(partitionExists(day)).isTrue();
    }

    @Test
    void daysAreRetiredOldestFirstOnePerBatchUpToTheLimit() throws Exception {
      for (int d = 40; d >= 30; d -= 5) {
        addDay(today.minusDays(d));
        insertDone(today.minusDays(d), "d" + d + "-", 2);
      }

      PurgeResult first = admin.purge(PurgePolicy.DEFAULT.withBatches(1_000, 2), false);

      assertThat(first.historyDays()).isEqualTo(2);
      assertThat(first.work()).isEqualTo(4);
      assertThat(first.complete()).isFalse();
      assertThat(partitionExists(today.minusDays(40))).isFalse();
      assertThat(partitionExists(today.minusDays(35))).isFalse();
      assertThat(partitionExists(today.minusDays(30))).isTrue();
      PurgeResult second = admin.purge(PurgePolicy.DEFAULT.withBatches(1_000, 2), false);
      assertThat(second.historyDays()).isEqualTo(1);
      assertThat(second.complete()).isTrue();
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(6);
    }

    @Test
    void aPurgeWithoutMaintenanceRetiresRowsWaitingInTheDefaultPartition() throws Exception {
      LocalDate old = today.minusDays(30);
      insertDone(old, "stray-", 3);
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history_default")).isEqualTo(3);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false, "ops", "retention");

      assertThat(r.historyDays()).isEqualTo(1);
      assertThat(r.work()).isEqualTo(3);
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history_default")).isZero();
      assertThat(partitionExists(old)).isFalse();
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(3);
      // One audit row for the whole purge, with the retired rows in its count.
      assertThat(f.query("SELECT work FROM {schema}.purge_audit"))
          .containsExactly(Map.of("work", 3L));
    }

    @Test
    void finishedRowsLeftInTheWorkTableArePurgedRowByRowAsBefore() throws Exception {
      // as a worker of an earlier release leaves them: done, in outbox
      f.update(
          "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
              + " claim_generation, attempts)"
              + " VALUES ('legacy', 'k', '{}', 'done', clock_timestamp() - interval '30 days',"
              + " 1, 1)");
      LocalDate old = today.minusDays(30);
      addDay(old);
      insertDone(old, "old-", 2);

      PurgeResult r = admin.purge(PurgePolicy.DEFAULT, false);

      assertThat(r.work()).isEqualTo(3);
      assertThat(r.historyDays()).isEqualTo(1);
      assertThat(f.count("SELECT count(*) FROM {schema}.work")).isZero();
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(3);
    }
  }

  @Nested
  class RetireHistoryDay {
    @Test
    void refusesADayThatEndsAfterKeepUntilAndChangesNothing() throws Exception {
      LocalDate day = today.minusDays(5);
      addDay(day);
      insertDone(day, "d-", 2);

      // keep_until inside the day: the day ends after it
      assertThatThrownBy(
              () ->
                  db.execute(
                      "SELECT {schema}.retire_history_day('%s', '%s 18:00:00+00')"
                          .formatted(day, day)))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("22023"));
      assertThat(partitionExists(day)).isTrue();
      assertThat(count(day)).isEqualTo(2);
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isZero();

      // keep_until at its very end: retired
      assertThat(
              db.queryLong(
                  "SELECT {schema}.retire_history_day('%s', '%s 00:00:00+00')"
                      .formatted(day, day.plusDays(1))))
          .isEqualTo(2);
      assertThat(partitionExists(day)).isFalse();
    }
  }

  @Nested
  class MaintenanceRounds {
    @Test
    void eachRoundCreatesTodaysAndTheNextTwoDaysPartitions() throws Exception {
      // as if the schema were migrated two days ago and nobody had created days since
      for (int d = 1; d <= 2; d++) {
        dropPartition(today.plusDays(d));
      }
      try (Maintenance m = maintenance()) {
        assertThat(m.runOnce().leader()).isTrue();
      }
      for (int d = 0; d <= 2; d++) {
        assertThat(partitionExists(today.plusDays(d))).as("day +%d", d).isTrue();
      }
      assertThat(partitionExists(today.plusDays(3))).isFalse();
    }

    @Test
    void rowsInTheDefaultPartitionGetTheirDayAndAreRetiredPastRetention() throws Exception {
      LocalDate old = today.minusDays(30);
      LocalDate recent = today.minusDays(2);
      insertDone(old, "old-", 3);
      insertDone(recent, "recent-", 2);
      assertThat(f.count("SELECT count(*) FROM {schema}.work_history_default")).isEqualTo(5);

      try (Maintenance m = maintenance()) {
        MaintenanceResult r = m.runOnce();
        assertThat(r.purge().historyDays()).isEqualTo(1);
        assertThat(r.purge().work()).isEqualTo(3);
      }

      assertThat(f.count("SELECT count(*) FROM {schema}.work_history_default")).isZero();
      assertThat(partitionExists(old)).isFalse();
      // the recent day has its partition now, and keeps its rows
      assertThat(partitionExists(recent)).isTrue();
      assertThat(count(recent)).isEqualTo(2);
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(3);
    }

    private Maintenance maintenance() {
      return Maintenance.create(
          db.dataSource(),
          () -> DriverManager.getConnection(db.jdbcUrl()),
          MaintenanceConfig.DEFAULT.withSchema(db.schema()));
    }
  }

  /** Enqueues work and has a started Relay complete it: it lands in the history table. */
  private void completeWithRelay(String workId, String payload) {
    try (Relay relay =
        Relay.builder(db.dataSource())
            .schema(db.schema())
            .pollInterval(Duration.ofMillis(200))
            .handle("k", claim -> Outcome.done("ok"))
            .build()) {
      relay.start();
      f.enqueue(Work.of(workId, "k", payload));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  f.count("SELECT count(*) FROM {schema}.work_history WHERE work_id = ?", workId)
                      == 1);
    }
  }

  /** Sets {@code column} of {@code workId}'s row in {@code table} to noon (UTC) of {@code day}. */
  private void noonOf(LocalDate day, String table, String column, String workId)
      throws SQLException {
    f.update(
        "UPDATE {schema}."
            + table
            + " SET "
            + column
            + " = (?::date)::timestamp AT TIME ZONE 'UTC' + interval '12 hours' WHERE work_id = ?",
        day.toString(),
        workId);
  }

  private void addDay(LocalDate day) throws SQLException {
    db.execute("SELECT {schema}.add_history_day('%s')".formatted(day));
  }

  /** {@code n} done rows finished on {@code day} (UTC), payload {"id": work ID}, generation 2. */
  private void insertDone(LocalDate day, String prefix, int n) throws SQLException {
    db.execute(
        """
        INSERT INTO {schema}.work_history
               (work_id, kind, payload, state, claim_generation, attempts, created_at,
                available_at, first_attempt_at, completed_at, outcome)
        SELECT '%2$s' || g, 'k', jsonb_build_object('id', '%2$s' || g), 'done', 2, 1, t, t, t, t,
               'delivered'
          FROM generate_series(1, %3$d) AS g,
               LATERAL (SELECT ('%1$s'::date)::timestamp AT TIME ZONE 'UTC'
                               + interval '1 hour' + g * interval '1 minute' AS t) AS at
        """
            .formatted(day, prefix, n));
  }

  private long count(LocalDate day) throws SQLException {
    return db.queryLong(
        "SELECT count(*) FROM {schema}.work_history WHERE completed_at >= '%s 00:00:00+00'"
                .formatted(day)
            + " AND completed_at < '%s 00:00:00+00'".formatted(day.plusDays(1)));
  }

  private boolean partitionExists(LocalDate day) throws SQLException {
    return db.queryLong(
            "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass('{schema}.work_history_"
                + NAME.format(day)
                + "') AND inhparent = '{schema}.work_history'::regclass")
        == 1;
  }

  private void dropPartition(LocalDate day) throws SQLException {
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute("DROP TABLE " + db.schema() + ".work_history_" + NAME.format(day));
    }
  }
}
