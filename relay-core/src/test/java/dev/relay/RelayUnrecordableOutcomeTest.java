package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Bug 1 of issue 13, the batch part: one outcome that PostgreSQL refuses to record, for a reason
 * that retrying does not change, must not hold the others of its completion batch. Before the fix
 * the completer repeated the whole batch until the leases passed, the worker stopped claiming, and
 * every outcome in the batch was given up and run again.
 *
 * <p>The refusal is real and row-specific: a trigger in the test's schema raises {@code
 * check_violation} when one work ID is recorded {@code done} (text cleaning cannot prevent it):
 * since schema version 25 that is the insert of its row into the history table. To put the refused
 * outcome in one batch with others, the completer is held on a row lock (the test locks the row of
 * a first item, {@code gate}) while the other handlers return.
 */
@RelayDatabaseTest
class RelayUnrecordableOutcomeTest {
  @Test
  void oneRefusedRowIsFailedWithEvidenceAndTheRestOfItsBatchIsRecorded(TestDatabase db)
      throws Exception {
    db.execute(
        "CREATE FUNCTION {schema}.refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " IF NEW.work_id = 'bad' AND NEW.state = 'done' THEN"
            + " RAISE EXCEPTION 'the ledger refuses bad' USING ERRCODE = 'check_violation';"
            + " END IF; RETURN NEW; END $$");
    db.execute(
        "CREATE TRIGGER refuse_bad BEFORE INSERT ON {schema}.work_history"
            + " FOR EACH ROW EXECUTE FUNCTION {schema}.refuse_bad()");
    int others = 11;
    List<Work> works = new ArrayList<>();
    works.add(Work.of("gate", "k", "{}"));
    works.add(Work.of("bad", "k", "{}"));
    for (int i = 0; i < others - 1; i++) {
      works.add(Work.of("ok-" + i, "k", "{}"));
    }
    int n = works.size();
    CountDownLatch gateStarted = new CountDownLatch(1);
    CountDownLatch gateLocked = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Events events = new Events();
    try (RelayFixture f = new RelayFixture(db);
        Connection locker = db.connection()) {
      f.enqueue(works);
      f.start(
          f.builder()
              .listener(events)
              .concurrency(n)
              .batchSize(n)
              .lease(Duration.ofMinutes(5))
              .renewInterval(Duration.ofMinutes(1))
              .handle(
                  "k",
                  claim -> {
                    if (claim.workId().equals("gate")) {
                      gateStarted.countDown();
                      gateLocked.await(60, TimeUnit.SECONDS);
                    } else {
                      release.await(60, TimeUnit.SECONDS);
                    }
                    return Outcome.done("ref-" + claim.workId());
                  }));

      // Hold the gate's row: the completer's first batch waits on it while the rest return.
      assertThat(gateStarted.await(60, TimeUnit.SECONDS)).isTrue();
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("SELECT 1 FROM " + db.schema() + ".outbox WHERE work_id = 'gate' FOR UPDATE");
      }
      gateLocked.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> events.finished.get() == 1);
      release.countDown();
      await().atMost(RelayFixture.PATIENCE).until(() -> events.finished.get() == n);
      locker.commit();

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> f.count("state = 'done'") == n - 1 && "failed".equals(f.state("bad")));
      assertThat(f.row("bad"))
          .containsEntry("last_error_kind", "record_failed")
          .containsEntry("outcome", "delivered")
          .containsEntry("claim_generation", "1");
      assertThat(f.column("bad", "last_error"))
          .contains("the database refused to record this outcome")
          .contains("ref-bad")
          .contains("the ledger refuses bad");
      assertThat(f.attempts("bad")).containsExactly("1 failed record_failed delivered");
      await().atMost(RelayFixture.PATIENCE).until(() -> events.failed.get() == 1);
      assertThat(events.completed.get()).isEqualTo(n - 1);
      assertThat(events.claimed.get()).as("nothing ran twice").isEqualTo(n);
    }
  }

  private static final class Events implements RelayEventListener {
    final AtomicInteger claimed = new AtomicInteger();
    final AtomicInteger finished = new AtomicInteger();
    final AtomicInteger completed = new AtomicInteger();
    final AtomicInteger failed = new AtomicInteger();

    @Override
    public void claimed(Claim claim) {
      claimed.incrementAndGet();
    }

    @Override
    public void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {
      finished.incrementAndGet();
    }

    @Override
    public void completed(Claim claim) {
      completed.incrementAndGet();
    }

    @Override
    public void failed(Claim claim, String errorKind, String error) {
      if (claim.workId().equals("bad") && errorKind.equals("record_failed")) {
        failed.incrementAndGet();
      }
    }
  }
}
