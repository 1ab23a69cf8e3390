package dev.relay.receiver;

import dev.relay.InvalidConfigurationException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.receiver.KeyPositionStore;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;

/**
 * The latest-state rule for ordered messages: a projection of current state accepts a higher
 * version of a key and refuses an older one, in the receiver's own transaction. Unlike {@link
 * KeyedHistory}, it never waits for a gap: version 5 arriving before 4 is applied, and 4 is then
 * refused as older.
 *
 * <pre>{@code
 * c.setAutoCommit(false);
 * if (latest.offer(c, "order-view", key, sequence).status() == LatestState.Status.NEWER) {
 *   upsertOrderView(c, ...);
 * }
 * c.commit();
 * }</pre>
 *
 * <p>The version is usually the item's sequence. A repeat of the current version reads {@code
 * SAME}. The highest version is kept in {@code receiver_key_position} and moves in the caller's
 * transaction; concurrent offers for one key are serialised by its row lock. Use one rule per
 * consumer name. Thread-safe; holds no connection.
 */
public final class LatestState {
  private final KeyPositionStore store;

  private LatestState(SchemaName schema) {
    this.store = new KeyPositionStore(schema);
  }

  /** Latest state on schema {@code relay}. */
  public static LatestState create() {
    return forSchema("relay");
  }

  /**
   * Latest state on {@code schema}.
   *
   * @throws InvalidConfigurationException if the schema name is not a plain identifier
   */
  public static LatestState forSchema(String schema) {
    return new LatestState(SchemaName.of(schema));
  }

  /** How an offered version compares with the highest seen. */
  public enum Status {
    /** Higher than any seen: accepted, and now the highest (in this transaction). */
    NEWER,
    /** Equal to the highest: a repeat. */
    SAME,
    /** Lower than the highest: refused; apply nothing. */
    OLDER
  }

  /**
   * The decision for one offer.
   *
   * @param consumer the consumer
   * @param orderingKey the key
   * @param version the offered version
   * @param status how it compares
   * @param highest the highest version before this call (0: none)
   */
  public record Decision(
      String consumer, String orderingKey, long version, Status status, long highest) {}

  /**
   * Offers {@code version} for {@code orderingKey} in the transaction open on {@code c}.
   *
   * @param c the receiver's connection, in the transaction of the effect
   * @param consumer the consumer name (1-100 characters from {@code A-Z a-z 0-9 . _ - :})
   * @param orderingKey the key (1-200 characters from the work-ID set)
   * @param version 1 or more
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if an argument is invalid (nothing is sent)
   */
  public Decision offer(Connection c, String consumer, String orderingKey, long version) {
    ReceiverInput.name("consumer", consumer);
    ReceiverInput.id("orderingKey", orderingKey);
    KeyedHistory.positive("version", version);
    ReceiverInput.requireTransaction(c, "latest state");
    long highest = store.lock(c, consumer, orderingKey);
    Status status;
    if (version > highest) {
      store.move(c, consumer, orderingKey, version);
      status = Status.NEWER;
    } else {
      status = version == highest ? Status.SAME : Status.OLDER;
    }
    return new Decision(consumer, orderingKey, version, status, highest);
  }
}
