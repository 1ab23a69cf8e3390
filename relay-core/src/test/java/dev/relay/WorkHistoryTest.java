package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Finished work leaves the work table for the history table (schema version 25), and the identity
 * of its ID goes with it: an enqueue of a finished ID is judged by its history row, a concurrent
 * enqueue racing the move is refused as retryable and then judged the same way, and dependencies
 * and ordered delivery still see the finished row. Mina's order 103 is the story.
 */
@RelayDatabaseTest
class WorkHistoryTest {
  private static final String KIND = "order-ack";
  private static final String PAYLOAD = "{\"order\": 103}";
  private static final Duration LEASE = Duration.ofMinutes(1);

  private TestDatabase db;
  private Outbox outbox;
  private ManualClaims claims;
  private final ExecutorService pool = Executors.newSingleThreadExecutor();

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
    this.outbox = Outbox.builder().schema(db.schema()).build();
    this.claims = ManualClaims.forSchema(db.schema());
  }

  @AfterEach
  void tearDown() {
    pool.shutdownNow();
  }

  private EnqueueResult enqueue(Work work) throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      EnqueueResult r = outbox.enqueue(c, work);
      c.commit();
      return r;
    }
  }

  private HeldClaim claim(String kind) throws SQLException {
    try (Connection c = db.connection()) {
      return claims.claimNext(c, "worker-1", "default", kind, LEASE).orElseThrow();
    }
  }

  private void settle(HeldClaim claim, Outcome outcome) throws SQLException {
    try (Connection c = db.connection()) {
      assertThat(claims.settle(c, claim, outcome).applied()).isTrue();
    }
  }

  private String where(String workId) throws SQLException {
    return db.queryString(
        "SELECT (SELECT count(*) FROM {schema}.outbox WHERE work_id = '"
            + workId
            + "') || ' in outbox, ' || (SELECT count(*) FROM {schema}.work_history WHERE work_id = '"
            + workId
            + "') || ' in history'");
  }

  @Test
  void completedAndCancelledWorkMovesToTheHistoryTableWithWhatTheSettleRecorded() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    enqueue(Work.of("order-104-ack", KIND, "{\"order\": 104}"));
    enqueue(Work.of("order-105-ack", KIND, "{\"order\": 105}"));
    settle(claim(KIND), Outcome.done("ack-7"));
    settle(claim(KIND), Outcome.cancel("the customer withdrew the order"));
    HeldClaim failing = claim(KIND);
    settle(failing, Outcome.fail("the receiver refused the payload"));

    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 1 in history");
    assertThat(
            db.queryString(
                "SELECT state || ' gen ' || claim_generation || ' ' || outcome || ' ' ||"
                    + " receiver_ref || ' ' || attempts || ' ' || (completed_at IS NOT NULL)"
                    + " || ' ' || (claimed_by IS NULL AND lease_until IS NULL)"
                    + " FROM {schema}.work_history WHERE work_id = 'order-103-ack'"))
        .isEqualTo("done gen 1 delivered ack-7 1 true true");
    assertThat(where("order-104-ack")).isEqualTo("0 in outbox, 1 in history");
    assertThat(
            db.queryString(
                "SELECT state || ' ' || last_error_kind FROM {schema}.work_history"
                    + " WHERE work_id = 'order-104-ack'"))
        .startsWith("cancelled ");
    // failed work waits for a person in the work table
    assertThat(where("order-105-ack")).isEqualTo("1 in outbox, 0 in history");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(3);
    // the move wrote each finished ID's tombstone (what enqueue probes); failed work has none
    assertThat(
            db.queryString(
                "SELECT string_agg(work_id || ' ' || final_state || ' gen ' || last_generation,"
                    + " ', ' ORDER BY work_id) FROM {schema}.tombstone"))
        .isEqualTo("order-103-ack done gen 1, order-104-ack cancelled gen 1");
    // the attempt history is unchanged by the move: one row per ending that is not a success
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.attempt WHERE work_id IN"
                    + " ('order-104-ack', 'order-105-ack')"))
        .isEqualTo(2);
  }

  @Test
  void anEnqueueOfAFinishedIdIsJudgedByItsHistoryRow() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    settle(claim(KIND), Outcome.done("ack-7"));

    // the same intention again (jsonb equality: key order and spacing do not matter)
    assertThat(enqueue(Work.of("order-103-ack", KIND, "{ \"order\" : 103 }")).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    assertThatThrownBy(() -> enqueue(Work.of("order-103-ack", KIND, "{\"order\": 999}")))
        .isInstanceOf(WorkConflictException.class)
        .hasMessageContaining("order-103-ack");
    // the SQL function of producers outside Java says the same
    assertThat(
            db.queryString(
                "SELECT {schema}.enqueue('order-103-ack', '" + KIND + "', '" + PAYLOAD + "')"))
        .isEqualTo("already_enqueued");
    assertThatThrownBy(
            () ->
                db.queryString(
                    "SELECT {schema}.enqueue('order-103-ack', '" + KIND + "', '{\"order\": 999}')"))
        .hasMessageContaining("already used by a different intention");
    // a keyed repeat takes no sequence and inserts nothing
    assertThat(enqueue(Work.of("order-103-ack", KIND, PAYLOAD).orderingKey("mina")).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    // and nothing was written by any of it
    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 1 in history");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.key_sequence WHERE last_sequence > 0"))
        .isZero();
  }

  @Test
  void anEnqueueRacingTheMoveIsRefusedAsRetryableAndItsRepeatIsJudgedByTheHistoryRow()
      throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    claim(KIND);
    try (Connection mover = db.connection()) {
      mover.setAutoCommit(false);
      // the move of a settle, held open: the row is deleted from the work table, its history row
      // and its tombstone inserted, none committed yet
      try (Statement s = mover.createStatement()) {
        s.execute(
            """
                WITH m AS (DELETE FROM {schema}.outbox WHERE work_id = 'order-103-ack'
                           RETURNING *),
                f AS (
                INSERT INTO {schema}.work_history
                SELECT work_id, kind, payload, 'done', available_at, claim_generation, NULL,
                       NULL, clock_timestamp(), created_at, queue, priority, attempts,
                       max_attempts, deadline, ordering_key, sequence, claimed_at,
                       first_attempt_at, last_error, last_error_kind, 'delivered', milestone,
                       receiver_ref, result, cancel_requested_at, retry_window_start, group_key,
                       has_dependencies, horizon_start, trace_context, snoozes
                  FROM m
                RETURNING *)
                INSERT INTO {schema}.tombstone
                       (work_id, kind, payload_digest, last_generation, final_state, outcome,
                        purged_at)
                SELECT work_id, kind, {schema}.payload_digest(payload), claim_generation, state,
                       outcome, completed_at
                  FROM f"""
                .replace("{schema}", db.schema()));
      }
      try (Connection producer = db.connection()) {
        race(mover, producer);
      }
    }
    // the repeat the exception asks for: judged by the history row, and nothing was duplicated
    assertThat(enqueue(Work.of("order-103-ack", KIND, PAYLOAD)).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    assertThatThrownBy(() -> enqueue(Work.of("order-103-ack", KIND, "{\"order\": 999}")))
        .isInstanceOf(WorkConflictException.class);
    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 1 in history");
  }

  /**
   * The producer enqueues the ID the uncommitted {@code mover} is moving: its insert waits for the
   * mover on the work table's unique index, then (the mover committed) meets the tombstone in the
   * purged-ID trigger and is refused as retryable. Without that trigger's check it would insert a
   * second row.
   */
  private void race(Connection mover, Connection producer) throws Exception {
    producer.setAutoCommit(false);
    try {
      int producerPid = pid(producer);
      CompletableFuture<EnqueueResult> racing =
          CompletableFuture.supplyAsync(
              () -> outbox.enqueue(producer, Work.of("order-103-ack", KIND, PAYLOAD)), pool);
      // the producer's insert waits for the mover on the work table's unique index
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_stat_activity WHERE pid = "
                              + producerPid
                              + " AND wait_event_type = 'Lock'")
                      == 1);
      mover.commit();

      assertThatThrownBy(racing::get)
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(RetryableException.class);
    } finally {
      // a failed assertion must not leave the producer's transaction open (it would hold back
      // every other schema's migration)
      producer.rollback();
    }
  }

  @Test
  void aDependencyThatFinishedIsFoundInTheHistoryTableAndReleasesItsDependent() throws Exception {
    enqueue(Work.of("order-103-pay", "payment", "{\"order\": 103}"));
    settle(claim("payment"), Outcome.done("paid"));
    assertThat(where("order-103-pay")).isEqualTo("0 in outbox, 1 in history");

    // named after its dependency finished: accepted (the dependency is neither missing nor
    // purged), and claimable at once because the dependency is done
    assertThat(enqueue(Work.of("order-103-ack", KIND, PAYLOAD).dependsOn("order-103-pay")).status())
        .isEqualTo(EnqueueResult.Status.ENQUEUED);
    assertThat(claim(KIND).workId()).isEqualTo("order-103-ack");
  }

  @Test
  void aDependentWaitingOnRunningWorkIsReleasedWhenItMovesToTheHistoryTable() throws Exception {
    enqueue(Work.of("order-103-pay", "payment", "{\"order\": 103}"));
    HeldClaim payment = claim("payment");
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD).dependsOn("order-103-pay"));
    try (Connection c = db.connection()) {
      assertThat(claims.claimNext(c, "worker-1", "default", KIND, LEASE)).isEmpty();
    }
    settle(payment, Outcome.done("paid"));
    assertThat(claim(KIND).workId()).isEqualTo("order-103-ack");
  }

  @Test
  void orderedDeliveryStillNamesThePreviousDeliveredSequenceAfterItMoved() throws Exception {
    enqueue(Work.of("mina-1", KIND, "{\"n\": 1}").orderingKey("mina"));
    enqueue(Work.of("mina-2", KIND, "{\"n\": 2}").orderingKey("mina"));
    HeldClaim first = claim(KIND);
    assertThat(first.sequence()).isEqualTo(1L);
    assertThat(first.previousDeliveredSequence()).isNull();
    settle(first, Outcome.done("r1"));

    HeldClaim second = claim(KIND);
    assertThat(second.sequence()).isEqualTo(2L);
    assertThat(second.previousDeliveredSequence()).isEqualTo(1L);
  }

  @Test
  void aStaleCompletionAfterTheMoveIsRefusedAndNamesTheFinishedState() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    HeldClaim generation1 = claim(KIND);
    try (Connection c = db.connection()) {
      assertThat(claims.expireLease(c, generation1).applied()).isTrue();
    }
    HeldClaim generation2 = claim(KIND);
    settle(generation2, Outcome.done("ack-8"));
    try (Connection c = db.connection()) {
      assertThat(claims.settle(c, generation1, Outcome.done("ack-7")).stale()).isTrue();
    }
    assertThat(
            db.queryString(
                "SELECT receiver_ref || ' gen ' || claim_generation FROM {schema}.work"
                    + " WHERE work_id = 'order-103-ack'"))
        .isEqualTo("ack-8 gen 2");
    assertThat(
            db.queryString(
                "SELECT error FROM {schema}.attempt WHERE work_id = 'order-103-ack'"
                    + " AND ending = 'stale_write'"))
        .contains("stored state done, generation 2");
  }

  @Test
  void aCancelOfWorkThatFinishedReportsItFinishedAndIsAudited() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    settle(claim(KIND), Outcome.done("ack-7"));
    try (RelayFixture f = new RelayFixture(db)) {
      Relay relay = f.builder().handle(KIND, RelayFixture::done).build();
      assertThat(relay.cancel("order-103-ack", "mina@ops", "the customer withdrew the order"))
          .isEqualTo(
              new CancelResult("order-103-ack", CancelResult.Status.ALREADY_FINISHED, "done"));
    }
    assertThat(
            db.queryString(
                "SELECT from_state || ' gen ' || from_generation || ' ' || result"
                    + " FROM {schema}.cancel_audit"))
        .isEqualTo("done gen 1 already_finished");
    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 1 in history");
  }

  @Test
  void aDayOfHistoryIsRetiredIntoTombstonesOnlyOnceItIsPastWhatIsKept() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    settle(claim(KIND), Outcome.done("ack-7"));
    String today = db.queryString("SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date::text");
    // today's partition is still retained: refused, nothing changed
    assertThatThrownBy(
            () ->
                db.queryString(
                    "SELECT {schema}.retire_history_day('" + today + "', clock_timestamp())"))
        .hasMessageContaining("still retained");
    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 1 in history");

    // a day gone by: its rows become tombstones and its partition is dropped
    db.execute(
        "SELECT {schema}.add_history_day(DATE '2026-01-10');"
            + " UPDATE {schema}.work_history SET completed_at = TIMESTAMPTZ '2026-01-10 12:00Z'"
            + " WHERE work_id = 'order-103-ack'");
    assertThat(
            db.queryLong(
                "SELECT {schema}.retire_history_day(DATE '2026-01-10', clock_timestamp())"))
        .isEqualTo(1);
    assertThat(db.queryString("SELECT to_regclass('{schema}.work_history_20260110')::text"))
        .isNull();
    assertThat(where("order-103-ack")).isEqualTo("0 in outbox, 0 in history");
    assertThat(
            db.queryString(
                "SELECT final_state || ' ' || outcome || ' gen ' || last_generation"
                    + " FROM {schema}.tombstone WHERE work_id = 'order-103-ack'"))
        .isEqualTo("done delivered gen 1");
    // and the ID is still held
    assertThat(enqueue(Work.of("order-103-ack", KIND, PAYLOAD)).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    assertThatThrownBy(() -> enqueue(Work.of("order-103-ack", KIND, "{\"order\": 999}")))
        .isInstanceOf(WorkConflictException.class);
  }

  @Test
  void rowsOfADayWithoutAPartitionWaitInTheDefaultOneUntilTheirDayIsCreated() throws Exception {
    enqueue(Work.of("order-103-ack", KIND, PAYLOAD));
    settle(claim(KIND), Outcome.done("ack-7"));
    // a day no partition exists for (as if maintenance had been stopped for days)
    db.execute(
        "UPDATE {schema}.work_history SET completed_at = TIMESTAMPTZ '2026-02-03 08:00Z'"
            + " WHERE work_id = 'order-103-ack'");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work_history_default"
                    + " WHERE work_id = 'order-103-ack'"))
        .isEqualTo(1);
    assertThat(db.queryString("SELECT {schema}.add_history_day(DATE '2026-02-03')::text"))
        .isEqualTo("true");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work_history_default")).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work_history_20260203"
                    + " WHERE work_id = 'order-103-ack'"))
        .isEqualTo(1);
    // created once; a second call does nothing
    assertThat(db.queryString("SELECT {schema}.add_history_day(DATE '2026-02-03')::text"))
        .isEqualTo("false");
  }

  private static int pid(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
