package dev.relay.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The enqueue statements' plans on large work and tombstone tables: the identity checks (taken ID,
 * tombstone) are primary-key probes, never scans, for the batch, the one-item and the hand-off form
 * alike. Asserted on EXPLAIN ANALYZE output (in a transaction that is rolled back), not on timings.
 */
@RelayDatabaseTest
class EnqueuePlanTest {
  private static final String EXPLAIN = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ";
  private TestDatabase db;
  private WorkSql sql;

  @BeforeEach
  void fill(TestDatabase db) throws SQLException {
    this.db = db;
    this.sql = new WorkSql(SchemaName.of(db.schema()));
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload)
        SELECT 'stored-' || g, 'mail', '{}' FROM generate_series(1, 50000) g;
        INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,
                                        final_state)
        SELECT 'purged-' || g, 'mail', 'x', 1, 'done' FROM generate_series(1, 50000) g;
        SELECT {schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)
          FROM generate_series(1, 7) AS d;
        INSERT INTO {schema}.handoff (worker_id, kind, queue, lease)
        VALUES ('web-1', 'mail', 'default', interval '30 seconds');
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.tombstone;
        """);
  }

  @Test
  void plainEnqueueProbesThePrimaryKeys() throws SQLException {
    String plan = explain(sql.enqueueManyNotify, false);

    assertThat(plan).as(plan).doesNotContain("Seq Scan on outbox", "Seq Scan on tombstone");
    assertThat(plan).as(plan).contains("tombstone_pkey");
    // a finished ID is held by its tombstone: no probe of each day of the history table
    assertThat(plan).as(plan).doesNotContain("work_history");
  }

  @Test
  void handoffEnqueueProbesThePrimaryKeysAndHandsOffWhatTheDatabaseAllows() throws SQLException {
    String plan = explain(sql.enqueueHandoffNotify, true);

    assertThat(plan).as(plan).doesNotContain("Seq Scan on outbox", "Seq Scan on tombstone");
    assertThat(plan).as(plan).contains("tombstone_pkey").doesNotContain("work_history");
  }

  @Test
  void oneItemEnqueueProbesThePrimaryKeysWhetherTheIdIsNewTakenOrPurged() throws SQLException {
    for (String id : new String[] {"new-1", "stored-7", "purged-7"}) {
      String plan = explainOne(id);

      assertThat(plan).as(plan).doesNotContain("Seq Scan on outbox", "Seq Scan on tombstone");
      assertThat(plan).as(plan).contains("tombstone_pkey").doesNotContain("work_history");
      // no arrays to unnest and no CTE to materialise: the insert reads its one row of values
      assertThat(plan).as(plan).doesNotContain("Function Scan", "CTE Scan");
    }
  }

  /** EXPLAIN ANALYZE of the one-item statement inserting {@code id}. */
  private String explainOne(String id) throws SQLException {
    List<String> plan = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + sql.enqueueOneNotify)) {
        ps.setString(1, id);
        ps.setString(2, "mail");
        ps.setString(3, "{}");
        ps.setString(4, "default");
        ps.setInt(5, 0);
        ps.setString(6, null);
        ps.setLong(7, 0L);
        ps.setNull(8, java.sql.Types.INTEGER);
        ps.setString(9, null);
        ps.setString(10, "");
        ps.setBoolean(11, false);
        ps.setString(12, null);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.add(rs.getString(1));
          }
        }
      }
      c.rollback();
    }
    return String.join("\n", plan);
  }

  /** EXPLAIN ANALYZE of one statement inserting three items (one new, one taken, one purged). */
  private String explain(String statement, boolean handoff) throws SQLException {
    List<String> plan = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(EXPLAIN + statement)) {
        int n = 3;
        ps.setArray(1, c.createArrayOf("text", new String[] {"new-1", "stored-7", "purged-7"}));
        ps.setArray(2, c.createArrayOf("text", new String[] {"mail", "mail", "mail"}));
        ps.setArray(3, c.createArrayOf("text", new String[] {"{}", "{}", "{}"}));
        ps.setArray(4, c.createArrayOf("text", new String[] {"default", "default", "default"}));
        ps.setArray(5, c.createArrayOf("int4", new Integer[] {0, 0, 0}));
        ps.setArray(6, c.createArrayOf("text", new String[n]));
        ps.setArray(7, c.createArrayOf("int8", new Long[] {0L, 0L, 0L}));
        ps.setArray(8, c.createArrayOf("int4", new Integer[n]));
        ps.setArray(9, c.createArrayOf("text", new String[n]));
        ps.setArray(10, c.createArrayOf("text", new String[] {"", "", ""}));
        ps.setArray(11, c.createArrayOf("bool", new Boolean[] {false, false, false}));
        ps.setArray(12, c.createArrayOf("text", new String[n])); // no trace context
        if (handoff) {
          ps.setArray(13, c.createArrayOf("bool", new Boolean[] {true, true, true}));
          ps.setString(14, "web-1");
          ps.setLong(15, 30_000);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.add(rs.getString(1));
          }
        }
      }
      if (handoff) {
        try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT state, claimed_by FROM " + db.schema() + ".work WHERE work_id = ?")) {
          ps.setString(1, "new-1");
          try (ResultSet rs = ps.executeQuery()) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("running");
            assertThat(rs.getString(2)).isEqualTo("web-1");
          }
        }
      }
      c.rollback();
    }
    return String.join("\n", plan);
  }
}
