package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The SQL function {@code enqueue} (V16) against {@link Outbox#enqueue}: every case of {@link
 * EnqueueTest} (identity, tombstone, concurrency, bad input), of dependencies and of ordering keys
 * runs through both producers, and each must answer the same. Answers are compared as neutral
 * words: {@code enqueued}, {@code already_enqueued}, {@code conflict}, {@code conflict (purged)},
 * {@code invalid <field>}, {@code unknown dependency}, {@code retryable}.
 */
@RelayDatabaseTest
class SqlEnqueueTest {
  private static final String AT = "2030-01-01T00:00:00Z";

  /** The two ways to enqueue. */
  enum Producer {
    JAVA,
    SQL
  }

  private DataSource ds;
  private String schema;
  private Outbox outbox;

  @BeforeEach
  void setUp(TestDatabase db) {
    ds = db.dataSource();
    schema = db.schema();
    outbox = Outbox.builder().schema(schema).build();
  }

  /**
   * Enqueues {@code w} by {@code p} on {@code c} (inside its transaction); the answer as a word.
   */
  private String enqueue(Producer p, Connection c, Work w) {
    try {
      if (p == Producer.JAVA) {
        return outbox.enqueue(c, w).status().name().toLowerCase();
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT "
                  + schema
                  + ".enqueue(work_id => ?, kind => ?, payload => ?::jsonb, queue => ?,"
                  + " priority => ?, available_at => ?, delay => ?::interval,"
                  + " max_attempts => ?, deadline => ?, group_key => ?, ordering_key => ?,"
                  + " depends_on => ?)")) {
        ps.setString(1, w.workId());
        ps.setString(2, w.kind());
        ps.setString(3, w.payload());
        ps.setString(4, w.queue());
        ps.setInt(5, w.priority());
        ps.setTimestamp(6, w.availableAt() == null ? null : Timestamp.from(w.availableAt()));
        ps.setString(7, w.delay() == null ? null : w.delay().toMillis() + " milliseconds");
        if (w.hasMaxAttempts()) {
          ps.setInt(8, w.maxAttempts());
        } else {
          ps.setNull(8, Types.INTEGER);
        }
        ps.setTimestamp(9, w.deadline() == null ? null : Timestamp.from(w.deadline()));
        ps.setString(10, w.group());
        ps.setString(11, w.orderingKey());
        ps.setArray(12, c.createArrayOf("text", w.dependsOn().toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getString(1);
        }
      }
    } catch (InvalidWorkException e) {
      return "invalid " + e.field();
    } catch (WorkConflictException e) {
      return e.purged() ? "conflict (purged)" : "conflict";
    } catch (UnknownDependencyException e) {
      return "unknown dependency";
    } catch (RetryableException e) {
      return "retryable";
    } catch (SQLException e) {
      return sqlAnswer(e);
    }
  }

  /** The function's SQLStates, as the words the Java exceptions map to. */
  private static String sqlAnswer(SQLException e) {
    String m = e.getMessage();
    switch (e.getSQLState()) {
      case "22023":
        // "invalid work 'ID': FIELD PROBLEM", as InvalidWorkException words it
        String afterColon = m.substring(m.indexOf("invalid work")).replaceFirst("^[^:]*: ", "");
        return "invalid " + afterColon.split(" ")[0];
      case "22P02":
        return "invalid payload"; // not JSON: refused by the jsonb cast before the call
      case "23505":
        return m.contains("tombstone") ? "conflict (purged)" : "conflict";
      case "23503":
        return "unknown dependency";
      case "40001":
        return "retryable";
      default:
        throw new AssertionError("unexpected SQLState " + e.getSQLState() + ": " + m, e);
    }
  }

  /** Enqueues in a transaction of its own and commits (rolls back on a refusal). */
  private String committed(Producer p, Work w) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      String answer = enqueue(p, c, w);
      if (answer.contains("enqueued")) {
        c.commit();
      } else {
        c.rollback();
      }
      return answer;
    }
  }

  private long count(String sql) {
    return Rows.count(ds, schema, sql);
  }

  private void purge(String workId) {
    Rows.update(
        ds,
        schema,
        """
        WITH gone AS (DELETE FROM {schema}.outbox WHERE work_id = '%s' RETURNING *)
        INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,
                                        final_state, outcome)
        SELECT work_id, kind, {schema}.payload_digest(payload), claim_generation, state, outcome
          FROM gone"""
            .formatted(workId));
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void anEqualRepeatIsAlreadyEnqueuedAndADifferentIntentionAConflict(Producer p)
      throws SQLException {
    assertThat(committed(p, Work.of("w1", "k", "{\"total\":29.00,\"id\":103}")))
        .isEqualTo("enqueued");
    assertThat(committed(p, Work.of("w1", "k", " { \"id\" : 103 ,\n \"total\" : 29.0 } ")))
        .isEqualTo("already_enqueued");
    assertThat(committed(p, Work.of("w1", "k", "{\"total\":31.00,\"id\":103}")))
        .isEqualTo("conflict");
    assertThat(committed(p, Work.of("w1", "other", "{\"total\":29.0,\"id\":103}")))
        .isEqualTo("conflict");
    committed(p, Work.of("w2", "k", "{\"total\":\"29.00\"}"));
    assertThat(committed(p, Work.of("w2", "k", "{\"total\":\"29.0\"}"))).isEqualTo("conflict");
    assertThat(count("SELECT count(*) FROM {schema}.work")).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void theTombstoneOfPurgedWorkStillDecides(Producer p) throws SQLException {
    committed(p, Work.of("old-1", "k", "{\"total\":29.00}"));
    purge("old-1");

    assertThat(committed(p, Work.of("old-1", "k", "{\"total\":29.0}")))
        .isEqualTo("already_enqueued");
    assertThat(committed(p, Work.of("old-1", "k", "{\"total\":31.00}")))
        .isEqualTo("conflict (purged)");
    assertThat(count("SELECT count(*) FROM {schema}.work")).isZero();
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void aRolledBackTransactionLeavesNoWork(Producer p) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(enqueue(p, c, Work.of("w", "k", "{}"))).isEqualTo("enqueued");
      c.rollback();
    }
    assertThat(count("SELECT count(*) FROM {schema}.work")).isZero();
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void aConcurrentDuplicateUnderRepeatableReadIsRetryable(Producer p) throws SQLException {
    try (Connection rr = ds.getConnection()) {
      rr.setAutoCommit(false);
      rr.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      Rows.query(rr, schema, "SELECT count(*) FROM {schema}.work"); // takes the snapshot

      committed(p, Work.of("dup", "k", "{}")); // by another transaction

      assertThat(enqueue(p, rr, Work.of("dup", "k", "{}"))).isEqualTo("retryable");
      rr.rollback();
      rr.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void badInputIsRefusedNamingTheFieldAndChangesNothing(Producer p) throws SQLException {
    Instant at = Instant.parse(AT);
    assertThat(committed(p, Work.of("", "k", "{}"))).isEqualTo("invalid workId");
    assertThat(committed(p, Work.of("x".repeat(201), "k", "{}"))).isEqualTo("invalid workId");
    assertThat(committed(p, Work.of("a b", "k", "{}"))).isEqualTo("invalid workId");
    assertThat(committed(p, Work.of("w", "", "{}"))).isEqualTo("invalid kind");
    assertThat(committed(p, Work.of("w", "k k", "{}"))).isEqualTo("invalid kind");
    assertThat(committed(p, Work.of("w", "k", "{}").queue(""))).isEqualTo("invalid queue");
    assertThat(committed(p, Work.of("w", "k", "{not json"))).isEqualTo("invalid payload");
    assertThat(committed(p, Work.of("w", "k", "\"" + "x".repeat(1 << 20) + "\"")))
        .isEqualTo("invalid payload");
    assertThat(committed(p, Work.of("w", "k", "{}").availableAt(at).deadline(at)))
        .isEqualTo("invalid deadline");
    assertThat(committed(p, Work.of("w", "k", "{}").maxAttempts(0)))
        .isEqualTo("invalid maxAttempts");
    assertThat(committed(p, Work.of("w", "k", "{}").orderingKey("a key")))
        .isEqualTo("invalid orderingKey");
    assertThat(committed(p, Work.of("w", "k", "{}").group("a group"))).isEqualTo("invalid group");
    assertThat(committed(p, Work.of("w", "k", "{}").dependsOn("w"))).isEqualTo("invalid dependsOn");
    assertThat(count("SELECT count(*) FROM {schema}.work")).isZero();
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void dependenciesMustExistAsWorkOrTombstoneAndAreRecorded(Producer p) throws SQLException {
    assertThat(committed(p, Work.of("invoice", "k", "{}").dependsOn("ack")))
        .isEqualTo("unknown dependency");
    committed(p, Work.of("ack", "k", "{}"));
    committed(p, Work.of("gone", "k", "{}"));
    purge("gone");

    assertThat(committed(p, Work.of("invoice", "k", "{}").dependsOn("ack", "gone")))
        .isEqualTo("enqueued");
    assertThat(
            count(
                "SELECT count(*) FROM {schema}.dependency WHERE work_id = 'invoice'"
                    + " AND depends_on IN ('ack', 'gone')"))
        .isEqualTo(2);
    assertThat(count("SELECT count(*) FROM {schema}.work WHERE has_dependencies")).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void orderingKeysGetSequencesAndAnEqualRepeatConsumesNone(Producer p) throws SQLException {
    committed(p, Work.of("o-1", "k", "{}").orderingKey("order-103"));
    assertThat(committed(p, Work.of("o-1", "k", "{}").orderingKey("order-103")))
        .isEqualTo("already_enqueued");
    committed(p, Work.of("o-2", "k", "{}").orderingKey("order-103"));

    assertThat(count("SELECT sequence FROM {schema}.work WHERE work_id = 'o-2'")).isEqualTo(2);
    assertThat(
            count(
                "SELECT last_sequence FROM {schema}.key_sequence"
                    + " WHERE ordering_key = 'order-103'"))
        .isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Producer.class)
  void theStoredRowIsTheSameWhicheverProducerWroteIt(Producer p) throws SQLException {
    Instant at = Instant.parse(AT);
    committed(
        p,
        Work.of("full", "mail", "{\"to\":\"mina\"}")
            .queue("mail")
            .priority(5)
            .availableAt(at)
            .deadline(at.plus(Duration.ofDays(1)))
            .maxAttempts(3)
            .group("customer-1"));
    committed(p, Work.of("plain", "mail", "{}"));

    assertThat(
            count(
                "SELECT count(*) FROM {schema}.work WHERE work_id = 'full' AND queue = 'mail'"
                    + " AND priority = 5 AND available_at = '"
                    + AT
                    + "' AND deadline = available_at + interval '1 day' AND max_attempts = 3"
                    + " AND group_key = 'customer-1' AND state = 'ready'"))
        .isEqualTo(1);
    assertThat(
            count(
                "SELECT count(*) FROM {schema}.work WHERE work_id = 'plain'"
                    + " AND queue = 'default' AND priority = 0 AND max_attempts IS NULL"
                    + " AND group_key = '' AND available_at <= clock_timestamp()"))
        .isEqualTo(1);
  }

  @Test
  void theFunctionIsNotExecutableByPublic(TestDatabase db) throws SQLException {
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.routine_privileges"
                    + " WHERE routine_schema = '{schema}' AND routine_name = 'enqueue'"
                    + " AND grantee = 'PUBLIC'"))
        .isZero();
  }
}
