package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.KindPolicy;
import dev.relay.admin.Admin;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
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
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox WHERE state = 'done'"))
        .isEqualTo(1_000);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox WHERE state = 'failed'"))
        .isEqualTo(500);
  }
}
