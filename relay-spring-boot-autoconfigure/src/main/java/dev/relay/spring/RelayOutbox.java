package dev.relay.spring;

import dev.relay.EnqueueResult;
import dev.relay.InvalidWorkException;
import dev.relay.Outbox;
import dev.relay.TransactionRequiredException;
import dev.relay.Work;
import dev.relay.jackson.JsonCodec;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Enqueues work in the current Spring-managed transaction, on the connection that transaction holds
 * for the application's {@link DataSource}, so the work and the business change commit or roll back
 * together. Works with {@code DataSourceTransactionManager} (JdbcTemplate, JdbcClient, jOOQ on the
 * same DataSource) and {@code JpaTransactionManager} (which exposes its JDBC connection).
 *
 * <pre>{@code
 * @Transactional
 * public void purchase(Order order) {
 *   orders.save(order);
 *   outbox.enqueue("order-" + order.id() + "-ack", "order_received", new OrderReceived(order.id()));
 * }
 * }</pre>
 *
 * <p>It refuses, before any SQL, with {@link TransactionRequiredException}: outside a transaction
 * (never a silent auto-commit), in a read-only transaction, and when the transaction holds no
 * connection of this DataSource (a transaction manager for another resource). Typed messages are
 * written with the application's Jackson mapper ({@link JsonCodec}); identity is the outbox's: the
 * same ID with an equal object is a repeat, a changed object a {@link
 * dev.relay.WorkConflictException}.
 *
 * <p>Any exception after the work was sent to the database marks the transaction rollback-only when
 * it runs under a {@code DataSourceTransactionManager}, so catching it cannot commit the business
 * change without its work; under other transaction managers let it propagate. Thread-safe.
 */
public final class RelayOutbox {
  private final DataSource dataSource;
  private final Outbox outbox;
  private final JsonCodec codec;

  /**
   * Creates the outbox; the auto-configuration declares one.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param outbox the outbox (schema, payload limit)
   * @param codec writes typed messages
   */
  public RelayOutbox(DataSource dataSource, Outbox outbox, JsonCodec codec) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.codec = Objects.requireNonNull(codec, "codec");
  }

  /**
   * New work whose payload is {@code message} written as JSON, for setting options ({@code delay},
   * {@code orderingKey} ...) before {@link #enqueue(Work)}.
   *
   * @throws InvalidWorkException if {@code message} is null or cannot be written
   */
  public Work work(String workId, String kind, Object message) {
    return codec.work(workId, kind, message);
  }

  /**
   * Enqueues {@code message}, written as JSON, under {@code workId} and {@code kind}.
   *
   * @throws TransactionRequiredException outside a read-write transaction on the DataSource
   * @throws InvalidWorkException if the work is invalid (nothing was sent)
   * @throws dev.relay.WorkConflictException if the ID is used by a different intention
   */
  public EnqueueResult enqueue(String workId, String kind, Object message) {
    return enqueue(work(workId, kind, message));
  }

  /**
   * Enqueues {@code work}; see {@link Outbox#enqueue}.
   *
   * @throws TransactionRequiredException outside a read-write transaction on the DataSource
   */
  public EnqueueResult enqueue(Work work) {
    return enqueueAll(List.of(Objects.requireNonNull(work, "work"))).get(0);
  }

  /**
   * Enqueues every item in one round trip; see {@link Outbox#enqueueAll}.
   *
   * @throws TransactionRequiredException outside a read-write transaction on the DataSource
   */
  public List<EnqueueResult> enqueueAll(List<Work> works) {
    return SpringTransactions.onTransactionConnection(
        dataSource, "enqueue", c -> outbox.enqueueAll(c, works));
  }
}
