package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Enqueue sends one item alone by a statement of its own (scalars, no arrays) and anything else as
 * arrays: every identity guarantee holds through both. {@link Shape#BATCH} sends the item with a
 * fresh companion, so the array statement carries it.
 */
@RelayDatabaseTest
class EnqueueShapesTest {
  /** How the item under test reaches the database. */
  enum Shape {
    ONE,
    BATCH
  }

  private DataSource ds;
  private String schema;
  private Outbox outbox;
  private int companions;

  @BeforeEach
  void setUp(TestDatabase db) {
    ds = db.dataSource();
    schema = db.schema();
    outbox = Outbox.builder().schema(schema).build();
  }

  /** Enqueues {@code w} in {@code shape} on {@code c}; returns {@code w}'s result. */
  private EnqueueResult enqueue(Connection c, Shape shape, Work w) {
    List<Work> works = new ArrayList<>(List.of(w));
    if (shape == Shape.BATCH) {
      works.add(Work.of("companion-" + ++companions, "k", "{}"));
    }
    return outbox.enqueueAll(c, works).get(0);
  }

  /** {@link #enqueue(Connection, Shape, Work)} in a transaction of its own, committed. */
  private EnqueueResult enqueue(Shape shape, Work w) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        EnqueueResult r = enqueue(c, shape, w);
        c.commit();
        return r;
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  private long rows(String workId) {
    return Rows.count(
        ds, schema, "SELECT count(*) FROM {schema}.work WHERE work_id = '" + workId + "'");
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void everyFieldIsStoredAsSent(Shape shape) throws SQLException {
    Instant at = Instant.parse("2030-01-02T03:04:05Z");
    Work w =
        Work.of("w1", "k", "{\"id\":103}")
            .queue("mail")
            .priority(7)
            .availableAt(at)
            .deadline(at.plus(Duration.ofHours(1)))
            .maxAttempts(4)
            .group("tenant-9");

    assertThat(enqueue(shape, w).status()).isEqualTo(EnqueueResult.Status.ENQUEUED);

    assertThat(
            Rows.count(
                ds,
                schema,
                "SELECT count(*) FROM {schema}.work WHERE work_id = 'w1' AND kind = 'k'"
                    + " AND payload = '{\"id\":103}' AND queue = 'mail' AND priority = 7"
                    + " AND available_at = '2030-01-02T03:04:05Z'"
                    + " AND deadline = '2030-01-02T04:04:05Z' AND max_attempts = 4"
                    + " AND group_key = 'tenant-9' AND NOT has_dependencies"
                    + " AND state = 'ready' AND claim_generation = 0"))
        .isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aDelayCountsFromTheDatabaseClockAndAnUnnamedCapStaysUnset(Shape shape) throws SQLException {
    Work w =
        Work.of("w2", "k", "{}").delay(Duration.ofHours(2)).traceContext(Map.of("traceparent", TP));

    enqueue(shape, w);

    assertThat(
            Rows.count(
                ds,
                schema,
                "SELECT count(*) FROM {schema}.work WHERE work_id = 'w2'"
                    + " AND available_at > clock_timestamp() + interval '1 hour'"
                    + " AND available_at <= clock_timestamp() + interval '2 hours'"
                    + " AND max_attempts IS NULL AND deadline IS NULL AND group_key = ''"
                    + " AND trace_context ->> 'traceparent' = '"
                    + TP
                    + "'"))
        .isEqualTo(1);
  }

  private static final String TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @ParameterizedTest
  @EnumSource(Shape.class)
  void anEqualRepeatIsAlreadyEnqueuedAndAnotherIntentionIsAConflict(Shape shape)
      throws SQLException {
    enqueue(shape, Work.of("w1", "k", "{\"total\":29.00,\"id\":103}"));

    assertThat(enqueue(shape, Work.of("w1", "k", "{\"id\":103,\"total\":29.0}")).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    assertThatThrownBy(() -> enqueue(shape, Work.of("w1", "k", "{\"id\":103,\"total\":31}")))
        .isInstanceOfSatisfying(
            WorkConflictException.class,
            e -> {
              assertThat(e.workId()).isEqualTo("w1");
              assertThat(e.purged()).isFalse();
            });
    assertThatThrownBy(() -> enqueue(shape, Work.of("w1", "other", "{\"id\":103}")))
        .isInstanceOf(WorkConflictException.class);
    assertThat(rows("w1")).isEqualTo(1);
  }

  /** What a purge leaves behind, the row gone and its tombstone kept, still decides. */
  @ParameterizedTest
  @EnumSource(Shape.class)
  void aTombstoneStillDecides(Shape shape) throws SQLException {
    enqueue(shape, Work.of("old-1", "k", "{\"total\":29.00}"));
    Rows.update(
        ds,
        schema,
        """
        WITH gone AS (DELETE FROM {schema}.outbox WHERE work_id = 'old-1' RETURNING *)
        INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,
                                        final_state, outcome)
        SELECT work_id, kind, {schema}.payload_digest(payload), claim_generation, state, outcome
          FROM gone""");

    assertThat(enqueue(shape, Work.of("old-1", "k", "{\"total\":29.0}")).status())
        .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
    assertThatThrownBy(() -> enqueue(shape, Work.of("old-1", "k", "{\"total\":31.00}")))
        .isInstanceOfSatisfying(
            WorkConflictException.class,
            e -> {
              assertThat(e.purged()).as("conflict with a tombstone says so").isTrue();
              assertThat(e.storedKind()).isEqualTo("k");
              assertThat(e.storedPayloadDigest()).isNotEqualTo(e.requestedPayloadDigest());
            })
        .hasMessageContaining("tombstone");
    assertThat(rows("old-1")).isZero();
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aConcurrentDuplicateUnderRepeatableReadIsRetryable(Shape shape) throws SQLException {
    try (Connection rr = ds.getConnection()) {
      rr.setAutoCommit(false);
      rr.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      Rows.query(rr, schema, "SELECT count(*) FROM {schema}.work"); // takes the snapshot

      enqueue(shape, Work.of("dup", "k", "{}")); // committed by another transaction

      assertThatThrownBy(() -> enqueue(rr, shape, Work.of("dup", "k", "{}")))
          .isInstanceOfSatisfying(
              RetryableException.class, e -> assertThat(e.sqlState()).isEqualTo("40001"));
      rr.rollback();
      rr.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
  }

  @ParameterizedTest
  @EnumSource(Shape.class)
  void aRolledBackEnqueueLeavesNothing(Shape shape) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(enqueue(c, shape, Work.of("gone", "k", "{}")).status())
          .isEqualTo(EnqueueResult.Status.ENQUEUED);
      c.rollback();
    }
    assertThat(rows("gone")).isZero();
  }
}
