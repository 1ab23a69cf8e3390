package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * The work table keeps the article's column names, so an operator can run its statements as
 * written: the three-column INSERT, the claim and the lock-then-guard completion.
 */
@RelayDatabaseTest
class ArticleSqlTest {
  @Test
  void articleInsertClaimAndCompletionRunAsWritten(TestDatabase db) throws Exception {
    try (Connection c = db.connection()) {
      try (Statement s = c.createStatement()) {
        s.execute("SET search_path TO " + db.schema());
        s.execute(
            """
            INSERT INTO outbox (work_id, kind, payload)
            VALUES (
            'order-103-ack',
            'order_received',
            '{"order_id":103,"customer_id":1,"total":"29.00",
            "message":"Order received; payment still pending"}'
            )""");
      }
      c.setAutoCommit(false);
      long generation;
      try (PreparedStatement claim =
          c.prepareStatement(
              """
              WITH candidates AS (
              SELECT work_id
              FROM outbox
              WHERE state IN ('ready', 'running')
              AND available_at <= clock_timestamp()
              AND (lease_until IS NULL OR lease_until <= clock_timestamp())
              ORDER BY available_at, work_id
              FOR UPDATE SKIP LOCKED
              LIMIT 10
              )
              UPDATE outbox AS j
              SET state = 'running',
              claimed_by = ?,
              claim_generation = j.claim_generation + 1,
              lease_until = clock_timestamp() + interval '1 minute'
              FROM candidates AS c
              WHERE j.work_id = c.work_id
              RETURNING j.work_id, j.kind, j.payload,
              j.claim_generation, j.lease_until""")) {
        claim.setString(1, "worker-a");
        try (ResultSet rs = claim.executeQuery()) {
          assertThat(rs.next()).isTrue();
          generation = rs.getLong("claim_generation");
        }
      }
      c.commit();
      assertThat(generation).isEqualTo(1);

      try (PreparedStatement lock =
              c.prepareStatement("SELECT work_id FROM outbox WHERE work_id = ? FOR UPDATE");
          PreparedStatement complete =
              c.prepareStatement(
                  """
                  UPDATE outbox
                  SET state = 'done', completed_at = clock_timestamp(),
                  claimed_by = NULL, lease_until = NULL
                  WHERE work_id = ? AND state = 'running'
                  AND claimed_by = ? AND claim_generation = ?
                  AND lease_until > clock_timestamp()
                  RETURNING work_id""")) {
        lock.setString(1, "order-103-ack");
        lock.executeQuery().close();
        complete.setString(1, "order-103-ack");
        complete.setString(2, "worker-a");
        complete.setLong(3, generation);
        try (ResultSet rs = complete.executeQuery()) {
          assertThat(rs.next()).isTrue();
        }
      }
      c.commit();
      c.setAutoCommit(true);
      try (Statement s = c.createStatement()) {
        s.execute("RESET search_path");
      }
    }
    assertThat(Rows.work(db.dataSource(), db.schema(), "order-103-ack"))
        .containsEntry("state", "done")
        .containsEntry("queue", "default")
        .containsEntry("attempts", 0);
  }
}
