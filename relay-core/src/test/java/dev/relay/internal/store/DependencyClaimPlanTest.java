package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The claim's dependency test on a table where the oldest ready rows all wait for failed work: it
 * runs per candidate row through primary-key lookups, never as a hash over the dependency table
 * joined to the whole work table. Asserted on EXPLAIN ANALYZE output, not on timings.
 */
@RelayDatabaseTest
class DependencyClaimPlanTest {
  @Test
  void dependentsAreTestedPerRowByIndexLookups(TestDatabase db) throws Exception {
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, available_at, completed_at)
        SELECT 'parent-' || g, 'k', '{}', 'failed', clock_timestamp() - interval '3 hours',
               clock_timestamp()
          FROM generate_series(1, 500) g;
        -- 500 held dependents, older than the free rows: the claim must pass them
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at, has_dependencies)
        SELECT 'child-' || g, 'k', '{}', clock_timestamp() - interval '2 hours', true
          FROM generate_series(1, 500) g;
        INSERT INTO {schema}.dependency (work_id, depends_on)
        SELECT 'child-' || g, 'parent-' || g FROM generate_series(1, 500) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, available_at)
        SELECT 'free-' || g, 'k', '{}', clock_timestamp() - interval '1 hour' + g * interval '1 ms'
          FROM generate_series(1, 50000) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.dependency;
        """);
    String claim = new WorkSql(SchemaName.of(db.schema())).claimBatch;
    List<String> plan = new ArrayList<>();
    List<String> claimed = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + claim)) {
        bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.add(rs.getString(1));
          }
        }
      }
      c.rollback();
      try (PreparedStatement ps = c.prepareStatement(claim)) {
        bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            claimed.add(rs.getString("work_id"));
          }
        }
      }
      c.rollback();
    }
    String text = String.join("\n", plan);
    assertThat(text)
        .as(text)
        .doesNotContain("Seq Scan on outbox")
        .doesNotContain("Seq Scan on dependency")
        // one probe per held dependent (rows printed as 1 or 1.00, by server version)
        .containsPattern("dependency_pkey on dependency d \\(actual rows=1(\\.00)? loops=500\\)")
        .contains("Index Scan using outbox_pkey on outbox");
    assertThat(claimed).hasSize(10).allMatch(id -> id.startsWith("free-"));
  }

  private static void bind(PreparedStatement ps) throws Exception {
    ps.setString(1, "default");
    ps.setArray(2, ps.getConnection().createArrayOf("text", new String[] {"k"}));
    ps.setInt(3, 10);
    ps.setString(4, "planner");
    ps.setLong(5, 60_000);
    ps.setString(6, "planner");
  }
}
