package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Adaptive completion batching (issue 24): an outcome is recorded at once when a writer is free,
 * also while another batch is still being written. Before, one writer wrote one batch at a time, so
 * an outcome that arrived while a batch committed waited for that commit before its own began. Here
 * the first outcome's write is held on a row lock the test takes; the second outcome is recorded
 * meanwhile by the other writer, and the first follows once the lock is gone, guarded as always
 * (lock, then the guarded write).
 */
@RelayDatabaseTest
class RelayCompletionWritersTest {
  @Test
  void anOutcomeIsRecordedWhileAnotherBatchWaitsOnItsWrite(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db);
        Connection holder = db.connection()) {
      CountDownLatch aStarted = new CountDownLatch(1);
      CountDownLatch aLocked = new CountDownLatch(1);
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.enqueue(Work.of("a", "k", "{}"), Work.of("b", "k", "{}"));
      f.start(
          f.builder()
              .concurrency(2)
              .lockTimeout(Duration.ofSeconds(60))
              .listener(events)
              .handle(
                  "k",
                  claim -> {
                    if (claim.workId().equals("a")) {
                      aStarted.countDown();
                      awaitLatch(aLocked);
                    } else {
                      // b finishes only once a's write waits on the test's row lock
                      await().atMost(RelayFixture.PATIENCE).until(() -> settleWaits(db) > 0);
                    }
                    return RelayFixture.done(claim);
                  }));

      assertThat(aStarted.await(60, TimeUnit.SECONDS)).isTrue();
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT 1 FROM " + db.schema() + ".outbox WHERE work_id = 'a' FOR UPDATE");
      }
      aLocked.countDown();

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("b")));
      assertThat(f.state("a")).as("a's write still waits on the lock").isEqualTo("running");
      assertThat(settleWaits(db)).isEqualTo(1);

      holder.commit();
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("a")));
      assertThat(f.row("a")).containsEntry("receiver_ref", "ref-a").containsEntry("attempts", "1");
      assertThat(events.count("completed")).isEqualTo(2);
      assertThat(events.count("stale")).isZero();
    }
  }

  /** Relay's settle lock statements of this schema waiting on a row lock. */
  private static long settleWaits(TestDatabase db) throws SQLException {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            + " AND query LIKE '%FOR UPDATE%' AND strpos(query, '"
            + db.schema().replace("'", "''")
            + ".outbox') > 0");
  }

  private static void awaitLatch(CountDownLatch latch) {
    try {
      if (!latch.await(60, TimeUnit.SECONDS)) {
        throw new AssertionError("the test never let the handler go on");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
