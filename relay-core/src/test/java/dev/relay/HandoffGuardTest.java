package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Nobody can forge a claim by inserting it (issue 24): a row inserted as {@code running} must be
 * exactly what a local hand-off inserts, for a worker registered to hand off its kind and queue,
 * with a lease no longer than the registered one; a row inserted {@code ready} is at generation 0.
 * Everything else is refused with SQLState 23514, naming the problem.
 */
@RelayDatabaseTest
class HandoffGuardTest {
  private TestDatabase db;

  @BeforeEach
  void register(TestDatabase db) throws SQLException {
    this.db = db;
    db.execute(
        "INSERT INTO {schema}.handoff (worker_id, kind, queue, lease)"
            + " VALUES ('web-1', 'mail', 'default', interval '30 seconds')");
  }

  /** Inserts one running row with the given overrides of the hand-off form. */
  private void insertRunning(String workId, String columns, String values) throws SQLException {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, claimed_by, lease_until,"
            + " claim_generation, attempts, claimed_at, first_attempt_at, retry_window_start"
            + columns
            + ") VALUES ('"
            + workId
            + "', 'mail', '{}', 'running', 'web-1', clock_timestamp() + interval '30 seconds',"
            + " 1, 1, clock_timestamp(), clock_timestamp(), clock_timestamp()"
            + values
            + ")");
  }

  /** Inserts work w1 of kind mail claimed by {@code worker} with the given lease and generation. */
  private void insertClaimed(String worker, String lease, int generation) throws SQLException {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, claimed_by, lease_until,"
            + " claim_generation, attempts, claimed_at, first_attempt_at) VALUES ('w1', 'mail',"
            + " '{}', 'running', '"
            + worker
            + "', clock_timestamp() + interval '"
            + lease
            + "', "
            + generation
            + ", 1, clock_timestamp(), clock_timestamp())");
  }

  private void refused(ThrowingInsert insert, String problem) {
    assertThatThrownBy(insert::run)
        .isInstanceOfSatisfying(
            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("23514"))
        .hasMessageContaining(problem);
  }

  @FunctionalInterface
  private interface ThrowingInsert {
    void run() throws SQLException;
  }

  @Test
  void aClaimOfTheHandOffFormByARegisteredWorkerIsAccepted() throws SQLException {
    insertRunning("w1", "", "");

    assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'w1'"))
        .isEqualTo("running");
  }

  @Test
  void aClaimByAWorkerNotRegisteredForTheKindOrQueueIsRefused() {
    refused(
        () -> insertClaimed("intruder", "1 second", 1),
        "worker intruder is not registered to hand off kind mail on queue default");
    refused(
        () -> insertRunning("w2", ", queue", ", 'other'"),
        "worker web-1 is not registered to hand off kind mail on queue other");
  }

  @Test
  void aClaimWithALaterGenerationOrMoreAttemptsIsRefused() {
    refused(
        () -> insertClaimed("web-1", "1 second", 7),
        "generation 7; a handed-off claim is generation 1");
  }

  @Test
  void aLeaseLongerThanTheRegisteredOneIsRefused() {
    refused(() -> insertClaimed("web-1", "1 hour", 1), "is longer than the registered 00:00:30");
  }

  @Test
  void keyedDependentDelayedOrLimitedWorkIsNeverInsertedClaimed() throws SQLException {
    refused(
        () -> insertRunning("w1", ", ordering_key, sequence", ", 'order-1', 1"),
        "keyed work is never handed off");
    refused(
        () -> insertRunning("w2", ", has_dependencies", ", true"),
        "work with dependencies is never handed off");
    refused(
        () -> insertRunning("w3", ", available_at", ", clock_timestamp() + interval '1 minute'"),
        "not available yet");
    db.execute("INSERT INTO {schema}.limiter (kind, max_running) VALUES ('mail', 1)");
    refused(() -> insertRunning("w4", "", ""), "kind mail is limited");
  }

  @Test
  void pausedWorkIsNeverInsertedClaimed() throws SQLException {
    db.execute(
        "INSERT INTO {schema}.pause (queue, kind, actor, reason)"
            + " VALUES (NULL, 'mail', 'olga', 'receiver down')");
    refused(() -> insertRunning("w1", "", ""), "kind mail on queue default is paused");
    db.execute("DELETE FROM {schema}.pause");
    db.execute(
        "INSERT INTO {schema}.pause (queue, kind, actor, reason)"
            + " VALUES ('default', NULL, 'olga', 'maintenance')");
    refused(() -> insertRunning("w2", "", ""), "kind mail on queue default is paused");
    // A pause of another kind, or one whose automatic resume has passed, holds nothing here.
    db.execute("DELETE FROM {schema}.pause");
    db.execute(
        "INSERT INTO {schema}.pause (queue, kind, actor, reason, resume_at) VALUES"
            + " (NULL, 'other', 'olga', 'other kind', NULL),"
            + " (NULL, 'mail', 'olga', 'over', clock_timestamp() - interval '1 second')");
    insertRunning("w3", "", "");

    assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'w3'"))
        .isEqualTo("running");
  }

  @Test
  void readyWorkIsInsertedAtGenerationZeroWithNoAttempts() {
    refused(
        () ->
            db.execute(
                "INSERT INTO {schema}.outbox (work_id, kind, payload, claim_generation)"
                    + " VALUES ('w1', 'mail', '{}', 5)"),
        "work is inserted ready at generation 0");
    refused(
        () ->
            db.execute(
                "INSERT INTO {schema}.outbox (work_id, kind, payload, attempts)"
                    + " VALUES ('w2', 'mail', '{}', 3)"),
        "work is inserted ready at generation 0");
  }

  @Test
  void theArticlesInsertAndFinishedRecordsAreUntouched() throws SQLException {
    db.execute("INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('a', 'mail', '{}')");
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,"
            + " claim_generation, attempts) VALUES ('b', 'mail', '{}', 'done', clock_timestamp(),"
            + " 2, 2)");

    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(2);
  }
}
