package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.admin.Admin;
import dev.relay.admin.Dependency;
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
 * What waits for an item ({@link Admin#dependents}): found through the index on the dependency,
 * never a scan of the dependency or work table. Asserted on EXPLAIN ANALYZE output and on the
 * values.
 */
@RelayDatabaseTest
class DependentsPlanTest {

  @Test
  void dependentsAreReadThroughTheDependencyIndex(TestDatabase db) throws Exception {
    // 20,000 work items, each of the last 10,000 waiting for one of the first 100; 'parent-1'
    // has three dependents of its own, one of them done.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload)
        SELECT 'w-' || g, 'k', '{}' FROM generate_series(1, 20000) g;
        INSERT INTO {schema}.dependency (work_id, depends_on)
        SELECT 'w-' || g, 'w-' || (g % 100 + 1) FROM generate_series(10001, 20000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at, attempts,
                                     claim_generation)
        VALUES ('parent-1', 'k', '{}', 'failed', clock_timestamp(), 3, 3),
               ('child-3', 'k', '{}', 'done', clock_timestamp(), 1, 1);
        INSERT INTO {schema}.outbox (work_id, kind, payload, has_dependencies)
        VALUES ('child-1', 'k', '{}', true), ('child-2', 'k', '{}', true);
        INSERT INTO {schema}.dependency (work_id, depends_on)
        VALUES ('child-1', 'parent-1'), ('child-2', 'parent-1'), ('child-3', 'parent-1');
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.dependency;
        """);
    DependencySql sql = DependencySql.of(SchemaName.of(db.schema()));
    List<String> plan = new ArrayList<>();
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql.dependentsOf)) {
      ps.setString(1, "parent-1");
      ps.setInt(2, 100);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.add(rs.getString(1));
        }
      }
    }
    String text = String.join("\n", plan);
    // (An empty tombstone table may be read whole: it holds only purged work's identities.)
    assertThat(text).as(text).doesNotContain("Seq Scan on dependency", "Seq Scan on outbox");
    assertThat(text).as(text).contains("dependency_depends_on_idx");

    List<Dependency> dependents =
        Admin.create(db.dataSource(), db.schema()).dependents("parent-1", 100);
    assertThat(dependents)
        .containsExactly(
            new Dependency("child-1", "ready", false),
            new Dependency("child-2", "ready", false),
            new Dependency("child-3", "done", false));
    assertThat(Admin.create(db.dataSource(), db.schema()).dependents("parent-1", 2)).hasSize(2);
  }
}
