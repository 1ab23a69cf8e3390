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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The claim's plan on a large table: it walks the partial claim index in claim order and stops
 * after its batch, so future-dated rows are never read, and the ordering gate probes the partial
 * key index. Asserted on EXPLAIN ANALYZE output, not on timings.
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
    List<String> plan = new ArrayList<>();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + claim)) {
        ps.setString(1, "default");
        ps.setArray(2, c.createArrayOf("text", new String[] {"k"}));
        ps.setInt(3, 10);
        ps.setString(4, "planner");
        ps.setLong(5, 60_000);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.add(rs.getString(1));
          }
        }
      }
      c.rollback();
    }
    String text = String.join("\n", plan);
    assertThat(text).as(text).contains("outbox_claim_idx").contains("outbox_key_sequence_idx");
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox").doesNotContain("Sort Method");
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
    assertThat(visited).as(text).isLessThan(2_000);
  }
}
