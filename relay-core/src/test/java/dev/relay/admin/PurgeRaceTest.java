package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.RetryableException;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@RelayDatabaseTest
class PurgeRaceTest {
  /**
   * With {@code batch}, the ID goes with a fresh companion (the array statement); alone, by the
   * one-item statement. The trigger that closes the race is the table's, so both must wait.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void anEnqueueThatMeetsAnUncommittedPurgeWaitsAndIsThenJudgedByTheTombstone(
      boolean batch, TestDatabase db) throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    // done, in the work table (as an earlier release's worker leaves it): purged row by row
    f.doneInWorkTable("late", "k");
    f.update("UPDATE {schema}.outbox SET completed_at = clock_timestamp() - interval '30 days'");
    try (Connection purger = db.dataSource().getConnection()) {
      purger.setAutoCommit(false);
      // The purge statement's effect, held open: row deleted, tombstone written, not committed.
      try (PreparedStatement ps =
          purger.prepareStatement(
              ("WITH d AS (DELETE FROM {schema}.outbox WHERE work_id = 'late' RETURNING *)"
                      + " INSERT INTO {schema}.tombstone"
                      + " (work_id, kind, payload_digest, last_generation, final_state, outcome)"
                      + " SELECT work_id, kind, {schema}.payload_digest(payload), claim_generation,"
                      + " state, outcome FROM d")
                  .replace("{schema}", db.schema()))) {
        ps.executeUpdate();
      }
      int pid;
      try (PreparedStatement ps = purger.prepareStatement("SELECT pg_backend_pid()");
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        pid = rs.getInt(1);
      }
      CompletableFuture<Object> enqueue =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  Work late = Work.of("late", "k", "{\"id\":\"other\"}");
                  return batch ? f.enqueue(late, Work.of("fresh", "k", "{}")) : f.enqueue(late);
                } catch (RuntimeException e) {
                  return e;
                }
              });
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  f.count(
                          "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                              + " WHERE NOT l.granted AND ? = ANY (pg_blocking_pids(a.pid))",
                          pid)
                      > 0);
      purger.commit();
      // The insert waited for the purge, then found the tombstone: a retryable refusal.
      Object result = enqueue.get();
      assertThat(result).isInstanceOf(RetryableException.class);
    }
    assertThat(f.row("late")).isNull();
    assertThat(f.row("fresh")).as("the whole transaction rolled back").isNull();
    assertThatThrownBy(() -> f.enqueue(Work.of("late", "k", "{\"id\":\"other\"}")))
        .isInstanceOf(WorkConflictException.class);
  }
}
