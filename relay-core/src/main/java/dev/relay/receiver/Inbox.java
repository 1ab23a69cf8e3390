package dev.relay.receiver;

import dev.relay.RetryableException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.json.JsonText;
import dev.relay.internal.receiver.InboxStore;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The receiver's inbox: applies each message once per consumer, in the receiver's own transaction,
 * on the receiver's own connection, and answers a repeat with the result saved the first time.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.create();                     // schema "relay"; share one instance
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   InboxResult r = inbox.process(c, "mailer", messageId, payload,
 *       tx -> sendAndRecord(tx, payload));           // returns the result as JSON text
 *   c.commit();                                     // record, effect and result: all or none
 *   reply(r.result());                              // the same answer on every repeat
 * } // on any exception: roll back; nothing was recorded, a repeat will run the effect
 * }</pre>
 *
 * <ul>
 *   <li><b>First delivery</b> records {@code (consumer, messageId, payload)}, runs the effect on
 *       the same connection and saves its result: {@link InboxResult.Status#APPLIED}.
 *   <li><b>A repeat</b> with a jsonb-equal payload (key order, whitespace and {@code 29.00} versus
 *       {@code 29.0} do not matter) returns the saved result without running the effect: {@link
 *       InboxResult.Status#DUPLICATE}.
 *   <li><b>A changed payload</b> under a used ID throws {@link PayloadMismatchException} naming the
 *       ID and both digests.
 *   <li><b>A concurrent repeat</b> waits until the first transaction ends, then returns its result
 *       (or runs the effect itself if the first rolled back). {@link #tryProcess} does not wait and
 *       answers {@link InboxResult.Status#IN_PROGRESS} instead.
 * </ul>
 *
 * <p><b>On any exception, roll back.</b> The record and the effect's writes are in the caller's
 * transaction; Relay never commits, rolls back or swallows an error on it. A failed effect rolled
 * back leaves no record, so a later repeat runs the effect again.
 *
 * <p>What it does not do: it cannot make a call to a third system exactly-once (only the writes the
 * effect makes on this connection share the transaction); it remembers a message only for its
 * consumer's horizon ({@link #setHorizon}); it does not order messages (use a {@link Fence} on the
 * ordering key with the sequence as token for "newer wins"). Under REPEATABLE READ or SERIALIZABLE,
 * a concurrent repeat surfaces as a {@link RetryableException} (40001): roll back and repeat. The
 * wait of a concurrent repeat is bounded by the session's {@code lock_timeout}, if set.
 * Thread-safe; holds no connection.
 */
public final class Inbox {
  /** The payload and result limit used when none is configured: 1 MiB of UTF-8. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  /** Most rows one {@link #purge} call deletes. */
  public static final int MAX_PURGE_BATCH = 100_000;

  /** The longest horizon accepted: ten years. */
  public static final Duration MAX_HORIZON = Duration.ofDays(3650);

  private final SchemaName schema;
  private final int maxPayloadBytes;
  private final InboxStore store;

  private Inbox(SchemaName schema, int maxPayloadBytes) {
    this.schema = schema;
    this.maxPayloadBytes = maxPayloadBytes;
    this.store = new InboxStore(schema, maxPayloadBytes);
  }

  /** An inbox on schema {@code relay} with the default payload limit. */
  public static Inbox create() {
    return builder().build();
  }

  /** A builder for a configured inbox. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link Inbox}; every setting is validated at {@link #build()}. */
  public static final class Builder {
    private String schema = "relay";
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

    private Builder() {}

    /** The schema holding the inbox tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The largest payload or result accepted, in UTF-8 bytes (1 to 64 MiB; default 1 MiB). */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      this.maxPayloadBytes = maxPayloadBytes;
      return this;
    }

    /** Validates the settings and builds the inbox. */
    public Inbox build() {
      JsonText.checkLimitSetting(maxPayloadBytes);
      return new Inbox(SchemaName.of(schema), maxPayloadBytes);
    }
  }

  /** The schema this inbox uses. */
  public String schema() {
    return schema.sql();
  }

  /**
   * Applies {@code messageId} once for {@code consumer}; see the class comment. Waits for a
   * concurrent transaction applying the same message.
   *
   * @param c the receiver's connection, in its open transaction (not auto-commit)
   * @param consumer the receiving component, 1-100 characters from {@code A-Z a-z 0-9 . _ - :}
   * @param messageId the sender's stable ID (Relay's work ID), 1-200 characters
   * @param payload the message as JSON text
   * @param effect the receiver's writes, on {@code c}; returns the result as JSON text (a NUL or
   *     lone surrogate in it, which PostgreSQL cannot store, is saved as U+FFFD)
   * @return applied now, or the saved result of the first delivery
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if an input (or the effect's result) is invalid
   * @throws PayloadMismatchException if the ID was first delivered with a different payload
   * @throws EffectFailedException if the effect threw a checked exception (roll back)
   * @throws RetryableException on a serialization failure, deadlock, lock timeout or lost
   *     connection
   */
  public InboxResult process(
      Connection c, String consumer, String messageId, String payload, InboxEffect effect) {
    validate(c, consumer, messageId, payload, effect);
    return store.process(c, consumer, messageId, payload, effect, true);
  }

  /**
   * As {@link #process}, but when another open transaction is applying the same message it returns
   * {@link InboxResult.Status#IN_PROGRESS} at once, having written nothing, instead of waiting. For
   * request handlers that should tell the sender to retry later rather than hold a thread.
   *
   * @param c the receiver's connection, in its open transaction (not auto-commit)
   * @param consumer the receiving component
   * @param messageId the sender's stable ID
   * @param payload the message as JSON text
   * @param effect the receiver's writes, on {@code c}
   * @return applied now, the saved result, or in progress elsewhere
   */
  public InboxResult tryProcess(
      Connection c, String consumer, String messageId, String payload, InboxEffect effect) {
    validate(c, consumer, messageId, payload, effect);
    return store.process(c, consumer, messageId, payload, effect, false);
  }

  private void validate(
      Connection c, String consumer, String messageId, String payload, InboxEffect effect) {
    ReceiverInput.name("consumer", consumer);
    ReceiverInput.id("messageId", messageId);
    ReceiverInput.json("payload", payload, maxPayloadBytes);
    if (effect == null) {
      throw new InvalidReceiverInputException("effect", "is null");
    }
    ReceiverInput.requireTransaction(c, "inbox processing");
  }

  /**
   * Registers (or changes) how long {@code consumer}'s records are kept: at least as long as any
   * sender may retry or redrive a message to it. A consumer without a horizon is never purged. Runs
   * one statement on {@code c}, in its transaction if one is open.
   *
   * @param c a connection
   * @param consumer the consumer
   * @param horizon at least one second, at most {@link #MAX_HORIZON}; whole seconds are kept
   */
  public void setHorizon(Connection c, String consumer, Duration horizon) {
    ReceiverInput.name("consumer", consumer);
    if (horizon == null || horizon.toSeconds() < 1 || horizon.compareTo(MAX_HORIZON) > 0) {
      throw new InvalidReceiverInputException(
          "horizon",
          "must be between 1 second and " + MAX_HORIZON.toDays() + " days, was " + horizon);
    }
    Tx.requireOpen(c);
    store.setHorizon(c, consumer, horizon);
  }

  /**
   * The horizon registered for {@code consumer}, as operators see it in {@code inbox_consumer}.
   *
   * @param c a connection
   * @param consumer the consumer
   * @return the horizon, or empty when none is registered (the consumer is never purged)
   */
  public Optional<Duration> horizon(Connection c, String consumer) {
    ReceiverInput.name("consumer", consumer);
    Tx.requireOpen(c);
    return store.horizon(c, consumer);
  }

  /**
   * Every registered horizon, by consumer name.
   *
   * @param c a connection
   * @return consumer to horizon, in name order
   */
  public Map<String, Duration> horizons(Connection c) {
    Tx.requireOpen(c);
    return store.horizons(c);
  }

  /**
   * Deletes up to {@code limit} of {@code consumer}'s records first received longer ago than its
   * horizon (database clock), oldest first; never a younger one, and nothing when the consumer has
   * no horizon. Rows locked by a running transaction are skipped. One statement on {@code c}; call
   * again while it returns {@code limit}.
   *
   * @param c a connection
   * @param consumer the consumer
   * @param limit 1 to {@link #MAX_PURGE_BATCH}
   * @return how many records were deleted
   */
  public int purge(Connection c, String consumer, int limit) {
    ReceiverInput.name("consumer", consumer);
    if (limit < 1 || limit > MAX_PURGE_BATCH) {
      throw new InvalidReceiverInputException(
          "limit", "must be between 1 and " + MAX_PURGE_BATCH + ", was " + limit);
    }
    Tx.requireOpen(c);
    return store.purge(c, consumer, limit);
  }
}
