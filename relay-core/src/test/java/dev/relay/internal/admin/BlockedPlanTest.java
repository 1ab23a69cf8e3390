package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The plans of the blocked-work statements (the counts of {@code relay status}, the list filter) on
 * a work table of mostly finished work and a ready backlog: both read the partial index of waiting
 * dependents and never scan the work table or the backlog. Asserted on EXPLAIN ANALYZE output.
 */
@RelayDatabaseTest
class BlockedPlanTest {

  private TestDatabase db;
  private AdminSql sql;

  @BeforeEach
  void fill(TestDatabase db) throws SQLException {
    this.db = db;
    this.sql = new AdminSql(SchemaName.of(db.schema()));
    // 30,000 done, 3,000 ready without dependencies, 20 failed and 20 ready dependencies, and 300
    // dependents: 100 held by a failed dependency, 200 waiting for ready ones; and 30,000 done in
    // the history table, by day, where workers move what they complete.
    db.execute(
        """
        SELECT {schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)
          FROM generate_series(1, 31) AS d;
        INSERT INTO {schema}.work_history (work_id, kind, payload, state, created_at, completed_at,
                                           claim_generation, attempts)
        SELECT 'finished-' || g, 'k' || (g % 3), '{}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds', 1, 1
          FROM generate_series(1, 30000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,
                                     claim_generation, attempts)
        SELECT 'done-' || g, 'k' || (g % 3), '{}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds', 1, 1
          FROM generate_series(1, 30000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, created_at)
        SELECT 'ready-' || g, 'k' || (g % 3), '{}', clock_timestamp() - g * interval '1 second'
          FROM generate_series(1, 3000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at, attempts,
                                     claim_generation, last_error_kind)
        SELECT 'dep-failed-' || g, 'k1', '{}', 'failed', clock_timestamp(), 3, 3, 'http_500'
          FROM generate_series(1, 20) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload)
        SELECT 'dep-ready-' || g, 'k1', '{}' FROM generate_series(1, 20) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, has_dependencies)
        SELECT 'dependent-' || g, 'k2', '{}', true FROM generate_series(1, 300) g;
        INSERT INTO {schema}.dependency (work_id, depends_on)
        SELECT 'dependent-' || g,
               CASE WHEN g <= 100 THEN 'dep-failed-' || (g % 20 + 1)
                    ELSE 'dep-ready-' || (g % 20 + 1) END
          FROM generate_series(1, 300) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.work_history;
        ANALYZE {schema}.dependency;
        """);
  }

  @Test
  void statusCountsReadOnlyTheWaitingDependents() throws Exception {
    String text = plan(sql.blockedByReason, ps -> {});
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    assertThat(text).as(text).contains("outbox_waiting_idx");
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(1_000);
    try (Connection c = db.connection();
        PreparedStatement ps = c.prepareStatement(sql.blockedByReason);
        ResultSet rs = ps.executeQuery()) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString("reason")).isEqualTo("dependency_failed");
      assertThat(rs.getLong("n")).isEqualTo(100);
      assertThat(rs.next()).isFalse();
    }
  }

  @Test
  void theBlockedFilterPagesThroughTheWaitingIndex() throws Exception {
    String text =
        plan(
            sql.listWork,
            Plans.page(
                51,
                (ps, p) -> {
                  for (int i = 0; i < 16; i++) {
                    ps.setNull(
                        p++, i == 8 || i == 9 || i == 10 || i == 11 ? Types.BIGINT : Types.VARCHAR);
                  }
                  ps.setString(p++, "dependency%");
                  ps.setString(p++, "dependency%");
                  ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
                  ps.setNull(p++, Types.TIMESTAMP_WITH_TIMEZONE);
                  ps.setNull(p++, Types.VARCHAR);
                  ps.setNull(p++, Types.ARRAY);
                  ps.setNull(p++, Types.ARRAY);
                  ps.setInt(p++, 51);
                  return p;
                }));
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    assertThat(text).as(text).contains("outbox_waiting_idx");
    // Blocked work is ready: the history table's branch is ruled out by its check constraint, and
    // the reasons look dependencies up by key (Plans counts history partitions too).
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(1_000);
  }

  private String plan(String query, Plans.Binder binder) throws SQLException {
    return Plans.explain(db, query, binder);
  }
}
