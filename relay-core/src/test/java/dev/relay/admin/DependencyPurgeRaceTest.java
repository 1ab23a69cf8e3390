package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.EnqueueResult;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A dependency that exists at enqueue cannot vanish before the dependent commits: enqueue locks it
 * (through {@code lock_dependencies}, migration V11), so a purge waits for the producer, and an
 * enqueue that meets an uncommitted purge waits for it and then counts the tombstone.
 */
@RelayDatabaseTest
class DependencyPurgeRaceTest {
  private static final String PURGE_LATE =
      "WITH d AS (DELETE FROM {schema}.outbox WHERE work_id = 'late' RETURNING *)"
          + " INSERT INTO {schema}.tombstone"
          + " (work_id, kind, payload_digest, last_generation, final_state, outcome)"
          + " SELECT work_id, kind, {schema}.payload_digest(payload), claim_generation,"
          + " state, outcome FROM d";

  @Test
  void aPurgeWaitsForAnOpenEnqueueThatNamesTheDependency(TestDatabase db) throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    // done, in the work table (as an earlier release's worker leaves it): purged row by row
    f.doneInWorkTable("late", "k");
    try (Connection producer = db.dataSource().getConnection()) {
      producer.setAutoCommit(false);
      f.outbox.enqueue(producer, Work.of("after-late", "k", "{}").dependsOn("late"));
      int pid = pid(producer);
      CompletableFuture<Integer> purge = CompletableFuture.supplyAsync(() -> purgeLate(db, f));
      awaitBlockedBy(f, pid);
      assertThat(purge).isNotDone();
      producer.commit();
      assertThat(purge.get()).isEqualTo(1);
    }
    assertThat(f.row("late")).isNull();
    assertThat(f.admin.dependencies("after-late"))
        .extracting(Dependency::workId, Dependency::state)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("late", "done"));
  }

  @Test
  void anEnqueueThatMeetsAnUncommittedPurgeWaitsAndCountsTheTombstone(TestDatabase db)
      throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    // done, in the work table (as an earlier release's worker leaves it): purged row by row
    f.doneInWorkTable("late", "k");
    try (Connection purger = db.dataSource().getConnection()) {
      purger.setAutoCommit(false);
      try (PreparedStatement ps =
          purger.prepareStatement(PURGE_LATE.replace("{schema}", db.schema()))) {
        ps.executeUpdate();
      }
      int pid = pid(purger);
      CompletableFuture<List<EnqueueResult>> enqueue =
          CompletableFuture.supplyAsync(
              () -> f.enqueue(Work.of("after-late", "k", "{}").dependsOn("late")));
      awaitBlockedBy(f, pid);
      purger.commit();
      assertThat(enqueue.get())
          .extracting(EnqueueResult::status)
          .containsExactly(EnqueueResult.Status.ENQUEUED);
    }
    assertThat(f.admin.blockedBy("after-late")).isEmpty();
    assertThat(f.admin.dependencies("after-late"))
        .extracting(Dependency::state)
        .containsExactly("done");
  }

  private static int purgeLate(TestDatabase db, AdminFixture f) {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(PURGE_LATE.replace("{schema}", db.schema()))) {
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int pid(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void awaitBlockedBy(AdminFixture f, int pid) {
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                f.count(
                        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                            + " WHERE NOT l.granted AND ? = ANY (pg_blocking_pids(a.pid))",
                        pid)
                    > 0);
  }
}
