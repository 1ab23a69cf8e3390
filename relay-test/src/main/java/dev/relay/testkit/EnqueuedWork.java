package dev.relay.testkit;

import dev.relay.ManualClaims;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Assertions on enqueued work, read on the caller's connection: inside the transaction that
 * enqueued it, before it commits (like River's {@code RequireInsertedTx}), or after. A failed
 * requirement throws {@link AssertionError} naming what was found, so it works with any test
 * framework.
 *
 * <pre>{@code
 * EnqueuedWork enqueued = EnqueuedWork.in("relay");
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   shop.storeOrder(tx, order);                 // enqueues order_received in this transaction
 *   EnqueuedWork.Row ack = enqueued.requireEnqueued(tx, "order_received");
 *   // ack.workId(), ack.payload(), ack.state() ...
 *   tx.rollback();
 * }
 * }</pre>
 *
 * <p>Reads the {@code work} view, whose columns are part of Relay's documented schema: unfinished
 * work in the {@code outbox} table and finished work a worker moved to the {@code work_history}
 * table alike, so an item a worker already completed is still found (in state {@code done}). It
 * never writes. Immutable and thread-safe.
 */
public final class EnqueuedWork {
  private final String select;

  private EnqueuedWork(String schema) {
    // The schema was validated as a plain identifier by ManualClaims.forSchema.
    this.select =
        "SELECT work_id, kind, queue, state, payload::text AS payload, priority, available_at,"
            + " ordering_key, sequence FROM "
            + schema
            + ".work WHERE kind = ? ORDER BY created_at, work_id";
  }

  /**
   * Assertions on the work in {@code schema}.
   *
   * @throws dev.relay.InvalidConfigurationException if {@code schema} is not a plain identifier
   */
  public static EnqueuedWork in(String schema) {
    return new EnqueuedWork(ManualClaims.forSchema(schema).schema());
  }

  /**
   * One enqueued item, as the connection sees it.
   *
   * @param workId the work ID
   * @param kind the kind
   * @param queue the queue
   * @param state the state ({@code ready} unless a worker took it; {@code done} once one completed
   *     it)
   * @param payload the payload as JSON text (jsonb's normal form)
   * @param priority the priority
   * @param availableAt when it becomes claimable, on the database clock
   * @param orderingKey the ordering key, or {@code null}
   * @param sequence the sequence within the key, or {@code null}
   */
  public record Row(
      String workId,
      String kind,
      String queue,
      String state,
      String payload,
      int priority,
      Instant availableAt,
      String orderingKey,
      Long sequence) {}

  /**
   * Every item of {@code kind} the connection can see (its own transaction's included), oldest
   * first.
   *
   * @throws IllegalStateException if the read fails
   */
  public List<Row> enqueued(Connection c, String kind) {
    Objects.requireNonNull(c, "connection");
    Objects.requireNonNull(kind, "kind");
    List<Row> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(select)) {
      ps.setString(1, kind);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long sequence = rs.getLong("sequence");
          Long seq = rs.wasNull() ? null : sequence;
          OffsetDateTime at = rs.getObject("available_at", OffsetDateTime.class);
          rows.add(
              new Row(
                  rs.getString("work_id"),
                  rs.getString("kind"),
                  rs.getString("queue"),
                  rs.getString("state"),
                  rs.getString("payload"),
                  rs.getInt("priority"),
                  at == null ? null : at.toInstant(),
                  rs.getString("ordering_key"),
                  seq));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read enqueued " + kind + ": " + e.getMessage(), e);
    }
    return rows;
  }

  /**
   * The one item of {@code kind} the connection can see.
   *
   * @throws AssertionError if there is none, or more than one
   */
  public Row requireEnqueued(Connection c, String kind) {
    return requireEnqueued(c, kind, 1).get(0);
  }

  /**
   * The items of {@code kind} the connection can see, requiring exactly {@code count} of them.
   *
   * @throws AssertionError if there are more or fewer
   */
  public List<Row> requireEnqueued(Connection c, String kind, int count) {
    List<Row> rows = enqueued(c, kind);
    if (rows.size() != count) {
      throw new AssertionError(
          "expected "
              + count
              + " enqueued item(s) of kind "
              + kind
              + ", found "
              + rows.size()
              + ": "
              + rows.stream().map(Row::workId).toList());
    }
    return rows;
  }

  /**
   * Requires that the connection sees no item of {@code kind}.
   *
   * @throws AssertionError if it sees one
   */
  public void requireNotEnqueued(Connection c, String kind) {
    requireEnqueued(c, kind, 0);
  }
}
