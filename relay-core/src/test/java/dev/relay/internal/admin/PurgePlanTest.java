package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.KindPolicy;
import dev.relay.admin.Admin;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * One purge batch reads about the rows it takes, however many are purgeable: the batch walks {@code
 * outbox_finished_idx} in its own order and stops at the limit. Ordered by completion time alone,
 * every batch read and sorted all purgeable rows (seconds per batch at a million, so a purge of
 * millions never finished; docs/operations.md, History at scale). Asserted on EXPLAIN ANALYZE
 * output and on the values, not on timings.
 */
@RelayDatabaseTest
class PurgePlanTest {

  @Test
  void aPurgeBatchWalksTheFinishedIndexAndStopsAtItsLimit(TestDatabase db) throws SQLException {
    // 20,000 done and 2,000 cancelled long past retention; 1,000 done an hour ago (kept), and
    // 500 failed long ago (never purged).
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'old-' || g, 'k', jsonb_build_object('n', g), 'done',
               clock_timestamp() - interval '30 days' + g * interval '1 second', 1, 1
          FROM generate_series(1, 20000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'gone-' || g, 'k', '{}', 'cancelled',
               clock_timestamp() - interval '20 days' + g * interval '1 second', 1, 1
          FROM generate_series(1, 2000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'new-' || g, 'k', '{}', 'done', clock_timestamp() - interval '1 hour', 1, 1
          FROM generate_series(1, 1000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'bad-' || g, 'k', '{}', 'failed', clock_timestamp() - interval '60 days', 3, 3
          FROM generate_series(1, 500) g;
        ANALYZE {schema}.outbox;
        """);
    AdminSql sql = new AdminSql(SchemaName.of(db.schema()));
    long retention = PurgePolicy.DEFAULT_WORK_RETENTION.toMillis();
    long horizon = KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis();
    String text =
        Plans.explain(
            db,
            sql.purgeWork,
            ps -> {
              ps.setLong(1, retention);
              ps.setLong(2, horizon);
              ps.setInt(3, 100);
            });
    assertThat(text).as(text).contains("Index Scan using outbox_finished_idx");
    assertThat(text).as(text).doesNotContain("Sort", "Seq Scan on outbox");
    // 100 rows taken: the index scan read about those, not the 22,000 purgeable rows.
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(1_000);

    // And the batches still take exactly the purgeable rows, cancelled and done alike.
    PurgeResult r =
        Admin.create(db.dataSource(), db.schema())
            .purge(PurgePolicy.DEFAULT.withBatches(1_000, 100), false);
    assertThat(r.work()).isEqualTo(22_000);
    assertThat(r.complete()).isTrue();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(22_000);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(1_000);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'failed'"))
        .isEqualTo(500);
  }

  @Test
  void evenAGenericPlanDeletesEachBatchThroughThePrimaryKey(TestDatabase db) throws SQLException {
    // A statement run often on one connection is planned generically (pgjdbc prepares it on the
    // server after 5 uses; PostgreSQL may then keep a plan made without the parameters' values),
    // and a generic LIMIT ? is guessed at a tenth of the table: joined with the CTE, the delete
    // then scanned the whole table on every batch.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'old-' || g, 'k', '{}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '1 second', 1, 1
          FROM generate_series(1, 20000) g;
        INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,
                                        final_state, outcome, purged_at)
        SELECT 'tomb-' || g, 'k', 'd', 1, 'done', 'delivered',
               clock_timestamp() - CASE WHEN g <= 500 THEN interval '200 days'
                                        ELSE interval '1 day' END
          FROM generate_series(1, 20000) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.tombstone;
        """);
    AdminSql sql = new AdminSql(SchemaName.of(db.schema()));
    String work =
        genericExplain(
            db,
            sql.purgeWork,
            PurgePolicy.DEFAULT_WORK_RETENTION.toMillis(),
            KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis(),
            100);
    assertThat(work).as(work).contains("outbox_pkey").doesNotContain("Seq Scan on outbox");
    assertThat(Plans.maxWorkTableRows(work)).as(work).isLessThan(1_000);
    String tombs =
        genericExplain(
            db, sql.purgeTombstones, PurgePolicy.DEFAULT_IDENTITY_HORIZON.toMillis(), 100);
    assertThat(tombs).as(tombs).doesNotContain("Seq Scan on tombstone");
  }

  /**
   * EXPLAIN ANALYZE of {@code query} (its {@code ?} placeholders numbered) as a prepared statement
   * under {@code plan_cache_mode = force_generic_plan}, in a transaction that is rolled back.
   */
  private static String genericExplain(TestDatabase db, String query, long... args)
      throws SQLException {
    StringBuilder numbered = new StringBuilder();
    int n = 0;
    for (char ch : query.toCharArray()) {
      numbered.append(ch == '?' ? "$" + ++n : String.valueOf(ch));
    }
    StringBuilder values = new StringBuilder();
    for (long a : args) {
      values.append(values.length() == 0 ? "" : ", ").append(a);
    }
    StringBuilder plan = new StringBuilder();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SET LOCAL plan_cache_mode = force_generic_plan");
        s.execute("PREPARE purge_batch AS " + numbered);
        try (ResultSet rs =
            s.executeQuery(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE purge_batch(" + values + ")")) {
          while (rs.next()) {
            plan.append(rs.getString(1)).append('\n');
          }
        }
      }
      c.rollback();
      try (Statement s = c.createStatement()) {
        s.execute("DEALLOCATE purge_batch"); // not transactional; the connection is pooled
      }
    }
    return plan.toString();
  }
}
