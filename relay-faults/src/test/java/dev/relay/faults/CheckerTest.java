package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Migrator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The checker's operator invariants against crafted database states: each test writes the state a
 * broken Relay (or a broken operator) would leave, and asserts that the checker names it, while the
 * same state without the fault passes. The database is a real PostgreSQL with Relay's schema and
 * the receiver's tables; only the rows are written by hand.
 */
class CheckerTest {
  private static PgCluster pg;
  private static Path dir;
  private static int databases;
  private Connection c;
  private final List<Producer.Tx> txs = new ArrayList<>();
  private final List<Producer.Reuse> reuses = new ArrayList<>();
  private final List<Operator.Action> actions = new ArrayList<>();
  private Recovery.Report recovery;

  @BeforeAll
  static void startServer() throws Exception {
    dir = Files.createTempDirectory("relay-faults-checker-");
    pg = PgCluster.start(dir);
  }

  @AfterAll
  static void stopServer() {
    if (pg != null) {
      pg.close();
    }
    Files2.deleteTree(dir);
  }

  /** A fresh database with Relay's schema, the receiver's tables and the fault suite's kind. */
  @BeforeEach
  void freshDatabase() throws SQLException {
    String name = "checker_" + (++databases);
    try (Connection admin = DriverManager.getConnection(pg.jdbcUrl());
        Statement s = admin.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    }
    String url = pg.jdbcUrl().replace("/postgres?", "/" + name + "?");
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(url);
    Migrator.migrate(ds, "relay");
    c = DriverManager.getConnection(url);
    sql(FxSql.CREATE);
    sql(
        """
        INSERT INTO relay.kind (kind, backoff_base, backoff_cap, max_attempts, max_elapsed,
                                handler_timeout, dedup_horizon, unknown_outcome, registered_by)
        VALUES ('fx', '50 ms', '1 s', 1000, '1 h', '2 s', '30 s', 'retry', 'test')
        """);
    // One committed transaction, delivered once, whose first attempt was 100 s ago.
    committed("t1", "t1-0");
    sql(
        """
        INSERT INTO relay.outbox (work_id, kind, payload, state, claim_generation, result,
                                  first_attempt_at, claimed_at, completed_at, outcome)
        VALUES ('t1-0', 'fx', '{"tx":"t1","res":"res-0","token":1}', 'done', 1,
                '{"generation":1}', now() - interval '100 s', now() - interval '100 s',
                now() - interval '99 s', 'delivered')
        """);
    call("t1-0", 1, "now() - interval '100 s'");
  }

  @Test
  void theCraftedBaseStateHoldsEveryInvariant() throws Exception {
    Checker.Result r = check();
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
  }

  @Test
  void workAWorkerMovedToTheHistoryTableCountsAsDone() throws Exception {
    sql(MOVE_TO_HISTORY);
    Checker.Result r = check();
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
    assertThat(r.figures().get("items done")).isEqualTo(1L);
  }

  @Test
  void anItemStoredInBothTheWorkTableAndTheHistoryIsCaught() throws Exception {
    // A move that inserted the history row but left the work row behind.
    sql("INSERT INTO relay.work_history SELECT * FROM relay.outbox WHERE work_id = 't1-0'");
    assertThat(check().violations().get(Checker.Invariant.COMMITTED_DONE))
        .singleElement()
        .asString()
        .contains("t1-0", "stored twice");
  }

  @Test
  void aFinishedIdWithoutItsTombstoneIsCaught() throws Exception {
    sql(MOVE_TO_HISTORY);
    sql("DELETE FROM relay.tombstone WHERE work_id = 't1-0'");
    assertThat(check().violations().get(Checker.Invariant.TOMBSTONE_HOLDS))
        .singleElement()
        .asString()
        .contains("t1-0", "no tombstone holds its ID");
  }

  @Test
  void aPurgedIdStoredAgainInTheHistoryIsCaught() throws Exception {
    // purged an hour before it finished: the tombstone is not the one its move wrote
    sql(MOVE_TO_HISTORY);
    sql(
        """
        UPDATE relay.tombstone SET purged_at = purged_at - interval '1 hour'
         WHERE work_id = 't1-0'
        """);
    assertThat(check().violations().get(Checker.Invariant.TOMBSTONE_HOLDS))
        .anySatisfy(v -> assertThat(v).contains("t1-0", "stored again after its purge"));
  }

  @Test
  void aRedrivePastTheHorizonWithoutTheOverrideIsCaught() throws Exception {
    // Redriven 70 s after the first attempt (horizon 30 s), audited as a plain redrive.
    sql(
        """
        INSERT INTO relay.redrive_audit (work_id, actor, reason, redriven_at, from_state,
                                         from_generation, forced)
        VALUES ('t1-0', 'op', 'op#1 redrive', now() - interval '30 s', 'done', 1, false)
        """);
    actions.add(new Operator.Action(1, Operator.Op.REDRIVE, "t1-0", null, Operator.Status.OK, ""));
    assertThat(check().violations().get(Checker.Invariant.REDRIVE_PAST_HORIZON_AUDITED))
        .singleElement()
        .asString()
        .contains("t1-0", "past its horizon without the override");
  }

  @Test
  void failedWorkThatRunsAgainWithoutAnAuditedRedriveIsCaught() throws Exception {
    sql(
        """
        INSERT INTO relay.attempt (work_id, generation, worker, claimed_at, ending, error_kind)
        VALUES ('t1-0', 1, 'w0', now() - interval '100 s', 'failed', 'http_500')
        """);
    sql(
        "UPDATE relay.outbox SET claim_generation = 2, result = '{\"generation\":2}',"
            + " claimed_at = now() - interval '90 s' WHERE work_id = 't1-0'");
    call("t1-0", 2, "now() - interval '90 s'");
    assertThat(check().violations().get(Checker.Invariant.REDRIVE_PAST_HORIZON_AUDITED))
        .anySatisfy(v -> assertThat(v).contains("ran again with no audited redrive"));
  }

  @Test
  void workClaimedAfterItsHorizonOrDeadlineIsCaught() throws Exception {
    // Generation 2 claimed 50 s after the first attempt (horizon 30 s), and it called the receiver.
    sql(
        """
        INSERT INTO relay.attempt (work_id, generation, worker, claimed_at, ending)
        VALUES ('t1-0', 1, 'w0', now() - interval '100 s', 'lease_expired')
        """);
    sql(
        "UPDATE relay.outbox SET claim_generation = 2, result = '{\"generation\":2}',"
            + " claimed_at = now() - interval '50 s' WHERE work_id = 't1-0'");
    call("t1-0", 2, "now() - interval '50 s'");
    // Another item claimed 10 s after its deadline.
    committed("t2", "t2-0");
    sql(
        """
        INSERT INTO relay.outbox (work_id, kind, payload, state, claim_generation, result,
                                  first_attempt_at, claimed_at, completed_at, deadline, outcome)
        VALUES ('t2-0', 'fx', '{"tx":"t2","res":"res-0","token":2}', 'done', 1,
                '{"generation":1}', now() - interval '5 s', now() - interval '5 s', now(),
                now() - interval '15 s', 'delivered')
        """);
    call("t2-0", 1, "now() - interval '5 s'");
    List<String> found = check().violations().get(Checker.Invariant.NO_RUN_PAST_HORIZON);
    assertThat(found)
        .anySatisfy(v -> assertThat(v).contains("t1-0", "after its deduplication horizon ended"))
        .anySatisfy(v -> assertThat(v).contains("t2-0", "after its deadline"));
  }

  @Test
  void anAuditedOverrideStartsANewHorizon() throws Exception {
    // The same late claim as above, after a forced redrive past the horizon: allowed.
    sql(
        """
        INSERT INTO relay.attempt (work_id, generation, worker, claimed_at, ending, error_kind)
        VALUES ('t1-0', 1, 'w0', now() - interval '100 s', 'failed', 'horizon_passed')
        """);
    sql(
        """
        INSERT INTO relay.redrive_audit (work_id, actor, reason, redriven_at, from_state,
                                         from_generation, forced)
        VALUES ('t1-0', 'op', 'op#1 override', now() - interval '55 s', 'failed', 1, true)
        """);
    sql(
        "UPDATE relay.outbox SET claim_generation = 2, result = '{\"generation\":2}',"
            + " horizon_start = now() - interval '55 s', claimed_at = now() - interval '50 s'"
            + " WHERE work_id = 't1-0'");
    call("t1-0", 2, "now() - interval '50 s'");
    actions.add(
        new Operator.Action(
            1, Operator.Op.REDRIVE_OVERRIDE, "t1-0", null, Operator.Status.OK, "redriven"));
    Checker.Result r = check();
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
    assertThat(r.figures().get("redrives past the horizon (audited override)")).isEqualTo(1L);
  }

  @Test
  void aCancelledRowThatBecomesDoneIsCaught() throws Exception {
    sql(
        """
        INSERT INTO relay.cancel_audit (work_id, actor, reason, from_state, from_generation, result)
        VALUES ('t1-0', 'op', 'op#1 cancel', 'ready', 0, 'cancelled')
        """);
    actions.add(
        new Operator.Action(1, Operator.Op.CANCEL, "t1-0", null, Operator.Status.OK, "CANCELLED"));
    List<String> found = check().violations().get(Checker.Invariant.CANCELLED_STAYS_CANCELLED);
    assertThat(found)
        .anySatisfy(v -> assertThat(v).contains("t1-0", "done now, never redriven"))
        .anySatisfy(v -> assertThat(v).contains("the receiver was called under generation 1"));
  }

  @Test
  void aPurgedIdStoredAgainWithAnotherPayloadIsCaught() throws Exception {
    sql(
        """
        INSERT INTO relay.tombstone (work_id, kind, payload_digest, last_generation, final_state)
        VALUES ('t1-0', 'fx', relay.payload_digest('{"tx":"t1","res":"res-0","token":7}'), 1,
                'done')
        """);
    sql(
        "INSERT INTO relay.purge_audit (actor, reason, dry_run, policy, work, tombstones,"
            + " attempts, audits, complete) VALUES ('op', 'op#1 retention', false, 'p', 1, 0, 0,"
            + " 0, true)");
    actions.add(new Operator.Action(1, Operator.Op.PURGE, null, null, Operator.Status.OK, ""));
    reuses.add(new Producer.Reuse("t1-0", false, Producer.ReuseResult.ENQUEUED));
    List<String> found = check().violations().get(Checker.Invariant.TOMBSTONE_HOLDS);
    assertThat(found)
        .anySatisfy(v -> assertThat(v).contains("t1-0", "DIFFERENT payload"))
        .anySatisfy(v -> assertThat(v).contains("another payload: enqueued"));
  }

  @Test
  void unauditedAndWronglyAuditedOperatorActionsAreCaught() throws Exception {
    // A cancel that Relay accepted with no audit row, a refused redrive with one, a purge with
    // none.
    actions.add(
        new Operator.Action(1, Operator.Op.CANCEL, "t1-0", null, Operator.Status.OK, "CANCELLED"));
    actions.add(
        new Operator.Action(
            2, Operator.Op.REDRIVE, "t1-0", null, Operator.Status.REFUSED, "RUNNING"));
    // A purge that never reached the server excuses no tombstone.
    actions.add(
        new Operator.Action(3, Operator.Op.PURGE, null, null, Operator.Status.NOT_SENT, "08001"));
    sql(
        """
        INSERT INTO relay.redrive_audit (work_id, actor, reason, from_state, from_generation)
        VALUES ('t1-0', 'op', 'op#2 redrive', 'done', 1)
        """);
    sql(
        """
        INSERT INTO relay.tombstone (work_id, kind, payload_digest, last_generation, final_state)
        VALUES ('gone-1', 'fx', 'x', 1, 'done')
        """);
    List<String> found = check().violations().get(Checker.Invariant.OPERATOR_AUDITED);
    assertThat(found)
        .anySatisfy(v -> assertThat(v).contains("op#1 CANCEL", "0 audit rows"))
        .anySatisfy(v -> assertThat(v).contains("op#2 REDRIVE refused"))
        .anySatisfy(v -> assertThat(v).contains("gone-1", "no purge audit row"));
  }

  @Test
  void aStuckRecoveryIsAViolationAndASlowOneIsNot() throws Exception {
    recovery = new Recovery.Report(Recovery.Verdict.SLOW, 200_000, 90_000, 12, 0, List.of());
    assertThat(check().violated(Checker.Invariant.RECOVERY_PROGRESSES)).isFalse();
    recovery =
        new Recovery.Report(
            Recovery.Verdict.STUCK,
            120_000,
            90_000,
            0,
            978,
            List.of("pauses in force: queue=null kind=fx"));
    assertThat(check().violations().get(Checker.Invariant.RECOVERY_PROGRESSES))
        .anySatisfy(v -> assertThat(v).contains("STUCK", "978 items open"))
        .anySatisfy(v -> assertThat(v).contains("pauses in force"));
  }

  @Test
  void aFirstDeliveryBehindTheKeysPositionIsCaughtUnlessTheItemEndedCancelled() throws Exception {
    // A done item the receiver met behind its key's position: its effect was never applied.
    sql(
        "INSERT INTO fx.anomaly (work_id, what) VALUES ('t1-0',"
            + " 'first delivery behind position 3 (sequence 2, generation 1)')");
    assertThat(check().violations().get(Checker.Invariant.KEYED_IN_SEQUENCE))
        .singleElement()
        .asString()
        .contains("t1-0", "behind position 3", "ended done");
    // A cancelled item's late delivery (its lease expired, the takeover ended it cancelled, the
    // key moved on): the receiver refusing it is strict history doing its job.
    sql("DELETE FROM fx.anomaly");
    committed("t2", "t2-0");
    sql(
        """
        INSERT INTO relay.outbox (work_id, kind, payload, state, claim_generation,
                                  first_attempt_at, claimed_at, completed_at, last_error_kind,
                                  cancel_requested_at)
        VALUES ('t2-0', 'fx', '{"tx":"t2","res":"res-0","token":2}', 'cancelled', 1,
                now() - interval '5 s', now() - interval '5 s', now(), 'cancelled',
                now() - interval '4 s')
        """);
    sql(
        "INSERT INTO fx.anomaly (work_id, what) VALUES ('t2-0',"
            + " 'first delivery behind position 3 (sequence 1, generation 1)')");
    Checker.Result r = check();
    assertThat(r.violations().get(Checker.Invariant.KEYED_IN_SEQUENCE)).isEmpty();
    assertThat(r.figures().get("late deliveries of cancelled keyed items refused")).isEqualTo(1L);
  }

  /** What a worker's completion does since schema version 25: the done row moves to history. */
  // A worker's move: the row leaves the work table for the history table, with its tombstone.
  private static final String MOVE_TO_HISTORY =
      """
      WITH moved AS (DELETE FROM relay.outbox WHERE work_id = 't1-0' RETURNING *),
      filed AS (INSERT INTO relay.work_history SELECT * FROM moved RETURNING *)
      INSERT INTO relay.tombstone (work_id, kind, payload_digest, last_generation, final_state,
                                  outcome, purged_at)
      SELECT work_id, kind, relay.payload_digest(payload), claim_generation, state, outcome,
             completed_at
        FROM filed
      """;

  private Checker.Result check() throws SQLException {
    Map<Scenario.Fault, Integer> faults = new EnumMap<>(Scenario.Fault.class);
    Checker.History history = new Checker.History(txs, reuses, actions, recovery);
    return new Checker(c, c, history, faults).check();
  }

  private void committed(String tx, String workId) throws SQLException {
    txs.add(new Producer.Tx(tx, List.of(workId), Producer.Status.COMMITTED));
    sql("INSERT INTO fx.business (tx_id, items) VALUES ('" + tx + "', 1)");
  }

  /** A receiver call under {@code generation}, claimed at {@code claimedAt} (an SQL expression). */
  private void call(String workId, long generation, String claimedAt) throws SQLException {
    sql(
        "INSERT INTO fx.raw_effect (work_id, generation, worker, pid, claimed_at) VALUES ('"
            + workId
            + "', "
            + generation
            + ", 'w0', 1, "
            + claimedAt
            + ")");
    sql(
        "INSERT INTO fx.inbox_effect (work_id, generation) SELECT '"
            + workId
            + "', "
            + generation
            + " WHERE NOT EXISTS (SELECT 1 FROM fx.inbox_effect WHERE work_id = '"
            + workId
            + "')");
  }

  private void sql(String statement) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
