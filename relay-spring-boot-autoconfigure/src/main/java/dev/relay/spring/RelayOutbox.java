package dev.relay.spring;

import dev.relay.EnqueueResult;
import dev.relay.HandedOffWork;
import dev.relay.InvalidWorkException;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.TransactionRequiredException;
import dev.relay.Work;
import dev.relay.jackson.JsonCodec;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

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
 * <p>With a local hand-off ({@code relay.local-handoff}, or a {@link Relay} built with {@link
 * Relay.Builder#localHandoff(boolean)}), work that the application's own worker takes is inserted
 * already claimed by it and started from an after-commit synchronization of the transaction, so
 * only once Spring's commit returned normally; after a rollback, or a commit that failed, nothing
 * starts (committed work then waits out its lease and is claimed). See {@link Outbox#handingOffTo}.
 *
 * <p>Any exception after the work was sent to the database marks the transaction rollback-only when
 * it runs under a {@code DataSourceTransactionManager}, so catching it cannot commit the business
 * change without its work; under other transaction managers let it propagate. Thread-safe.
 */
public final class RelayOutbox {
  private final DataSource dataSource;
  private final Outbox outbox;
  private final JsonCodec codec;
  private final Supplier<Relay> handoffTo;
  private volatile Handing handing; // the outbox handing off to the current runtime

  private record Handing(Relay relay, Outbox outbox) {}

  /**
   * Creates the outbox, without local hand-off.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param outbox the outbox (schema, payload limit)
   * @param codec writes typed messages
   */
  public RelayOutbox(DataSource dataSource, Outbox outbox, JsonCodec codec) {
    this(dataSource, outbox, codec, () -> null);
  }

  /**
   * Creates the outbox; the auto-configuration declares one.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param outbox the outbox (schema, payload limit)
   * @param codec writes typed messages
   * @param handoffTo the application's runtime, or {@code null} while there is none: when it was
   *     built with {@link Relay.Builder#localHandoff(boolean) localHandoff(true)} and runs, work it
   *     takes is handed off to it
   */
  public RelayOutbox(
      DataSource dataSource, Outbox outbox, JsonCodec codec, Supplier<Relay> handoffTo) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.codec = Objects.requireNonNull(codec, "codec");
    this.handoffTo = Objects.requireNonNull(handoffTo, "handoffTo");
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
    Outbox o = current();
    if (o == outbox) {
      return SpringTransactions.onTransactionConnection(
          dataSource, "enqueue", c -> outbox.enqueueAll(c, works));
    }
    return SpringTransactions.onTransactionConnection(
        dataSource,
        "enqueue",
        c -> {
          List<EnqueueResult> results = o.enqueueAll(c, works);
          HandedOffWork handedOff = o.takeHandedOff(c);
          if (handedOff.size() > 0) {
            TransactionSynchronizationManager.registerSynchronization(
                new StartAfterCommit(handedOff));
          }
          return results;
        });
  }

  /** The outbox to use now: handing off to the runtime while one that hands off runs. */
  private Outbox current() {
    Relay relay = handoffTo.get();
    if (relay == null || !relay.localHandoff() || !relay.isRunning()) {
      return outbox;
    }
    Handing h = handing;
    if (h == null || h.relay() != relay) {
      h = new Handing(relay, outbox.handingOffTo(relay));
      handing = h;
    }
    return h.outbox();
  }

  /**
   * Starts handed-off work only after the commit returned normally (afterCommit runs only then);
   * any other end of the transaction gives it up, and committed work waits out its lease.
   */
  private record StartAfterCommit(HandedOffWork work) implements TransactionSynchronization {
    @Override
    public void afterCommit() {
      work.start();
    }

    @Override
    public void afterCompletion(int status) {
      work.discard(); // nothing after start(); after a rollback or unknown status, gives up
    }
  }
}
