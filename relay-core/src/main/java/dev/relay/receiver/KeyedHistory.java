package dev.relay.receiver;

import dev.relay.InvalidConfigurationException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.receiver.KeyPositionStore;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;

/**
 * The strict-history rule for ordered messages: a consumer applies every item of an ordering key in
 * sequence, and holds an item until the one before it has arrived. "The one before" is the sender's
 * previous <i>delivered</i> sequence ({@link dev.relay.Claim#previousDeliveredSequence}), so an
 * item the sender cancelled is a deliberate gap the receiver does not wait for, while a message
 * still on its way is a gap it does wait for.
 *
 * <pre>{@code
 * c.setAutoCommit(false);
 * KeyedHistory.Decision d = history.offer(c, "ledger", key, sequence, previousDelivered);
 * switch (d.status()) {
 *   case APPLY -> { applyEvent(c, ...); c.commit(); }          // position moved in this tx
 *   case ALREADY_APPLIED -> { c.rollback(); return ok(); }       // a repeat
 *   case HOLD -> { c.rollback(); return retryLater(d.lastApplied()); } // gap: not yet
 * }
 * }</pre>
 *
 * <p>The position is kept in {@code receiver_key_position} and moves in the caller's transaction,
 * so it commits or rolls back with the effect; concurrent deliveries for one key are serialised by
 * its row lock. A consumer uses one rule per key space: do not mix this class and {@link
 * LatestState} under one consumer name. Thread-safe; holds no connection.
 */
public final class KeyedHistory {
  private final KeyPositionStore store;

  private KeyedHistory(SchemaName schema) {
    this.store = new KeyPositionStore(schema);
  }

  /** Strict history on schema {@code relay}. */
  public static KeyedHistory create() {
    return forSchema("relay");
  }

  /**
   * Strict history on {@code schema}.
   *
   * @throws InvalidConfigurationException if the schema name is not a plain identifier
   */
  public static KeyedHistory forSchema(String schema) {
    return new KeyedHistory(SchemaName.of(schema));
  }

  /** What to do with one delivery. */
  public enum Status {
    /** Apply it now; the position has moved to its sequence in this transaction. */
    APPLY,
    /** Its sequence is at or below the position: a repeat; apply nothing. */
    ALREADY_APPLIED,
    /** The previous delivered sequence has not arrived yet: hold it and let the sender retry. */
    HOLD
  }

  /**
   * The decision for one delivery.
   *
   * @param consumer the consumer
   * @param orderingKey the key
   * @param sequence the offered sequence
   * @param status what to do
   * @param lastApplied the position before this call (0: nothing applied yet)
   */
  public record Decision(
      String consumer, String orderingKey, long sequence, Status status, long lastApplied) {}

  /**
   * Offers one delivery in the transaction open on {@code c}; see the class comment.
   *
   * @param c the receiver's connection, in the transaction of the effect
   * @param consumer the consumer name (1-100 characters from {@code A-Z a-z 0-9 . _ - :})
   * @param orderingKey the key (1-200 characters from the work-ID set)
   * @param sequence the item's sequence, 1 or more
   * @param previousDeliveredSequence the sender's previous delivered sequence of the key, or {@code
   *     null} if none was delivered before this item
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if an argument is invalid (nothing is sent)
   */
  public Decision offer(
      Connection c,
      String consumer,
      String orderingKey,
      long sequence,
      Long previousDeliveredSequence) {
    ReceiverInput.name("consumer", consumer);
    ReceiverInput.id("orderingKey", orderingKey);
    positive("sequence", sequence);
    if (previousDeliveredSequence != null) {
      positive("previousDeliveredSequence", previousDeliveredSequence);
      if (previousDeliveredSequence >= sequence) {
        throw new InvalidReceiverInputException(
            "previousDeliveredSequence",
            previousDeliveredSequence + " is not below the sequence " + sequence);
      }
    }
    ReceiverInput.requireTransaction(c, "strict history");
    long last = store.lock(c, consumer, orderingKey);
    Status status;
    if (sequence <= last) {
      status = Status.ALREADY_APPLIED;
    } else if (previousDeliveredSequence == null || previousDeliveredSequence <= last) {
      store.move(c, consumer, orderingKey, sequence);
      status = Status.APPLY;
    } else {
      status = Status.HOLD;
    }
    return new Decision(consumer, orderingKey, sequence, status, last);
  }

  static void positive(String field, long value) {
    if (value < 1) {
      throw new InvalidReceiverInputException(field, "must be 1 or more, was " + value);
    }
  }
}
