package dev.relay.transport.broker;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.InvalidConfigurationException;
import dev.relay.RelayTracing;
import dev.relay.RetryableException;
import dev.relay.TransactionRequiredException;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.InvalidReceiverInputException;
import dev.relay.receiver.PayloadMismatchException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The consuming side of a broker transport: applies each received message once, in the consumer's
 * own database transaction, keyed by its {@value BrokerHeaders#WORK_ID} header, with the fence
 * advanced first when the message carries a fencing token. Acknowledge the message to the broker
 * (commit the Kafka offset, ack the AMQP delivery) only after {@link #apply} returned: the record
 * of the message and the consumer's writes are then committed together, so a redelivery (a
 * rebalance, a crash before the ack, a repeat publish) is answered {@link Status#DUPLICATE} and
 * changes nothing.
 *
 * <pre>{@code
 * BrokerInbox inbox = BrokerInbox.builder(dataSource).consumer("billing").build();
 * for (ConsumerRecord<String, String> r : records) {
 *   BrokerInbox.Result result = inbox.apply(
 *       name -> BrokerHeaders.decode(r.headers().lastHeader(name) == null ? null
 *           : r.headers().lastHeader(name).value()),
 *       r.value(),
 *       (tx, delivery) -> billing.record(tx, delivery.payload()));
 * }
 * consumer.commitSync();                             // only after every transaction committed
 * }</pre>
 *
 * <table>
 *   <caption>Results</caption>
 *   <tr><th>Case</th><th>Result</th><th>Transaction</th><th>Ack the message?</th></tr>
 *   <tr><td>first delivery</td><td>{@link Status#APPLIED}</td><td>committed</td><td>yes</td></tr>
 *   <tr><td>repeat with an equal payload</td><td>{@link Status#DUPLICATE}</td><td>nothing
 *       written</td><td>yes</td></tr>
 *   <tr><td>fencing token lower than the highest seen</td><td>{@link Status#STALE}</td><td>rolled
 *       back, nothing written</td><td>yes: a newer holder already wrote</td></tr>
 *   <tr><td>headers or payload invalid</td><td>{@link InvalidReceiverInputException}</td><td>nothing
 *       sent</td><td>never valid: dead-letter it</td></tr>
 *   <tr><td>same work ID, different payload</td><td>{@link PayloadMismatchException}</td><td>rolled
 *       back</td><td>never valid: dead-letter it</td></tr>
 *   <tr><td>the effect threw</td><td>its exception (checked ones wrapped in {@code
 *       EffectFailedException})</td><td>rolled back</td><td>no: redeliver</td></tr>
 *   <tr><td>lock timeout, deadlock, lost connection</td><td>{@link RetryableException}</td>
 *       <td>rolled back</td><td>no: redeliver</td></tr>
 *   <tr><td>COMMIT failed without an answer</td><td>{@link CommitOutcomeUnknownException}</td>
 *       <td>unknown</td><td>no: the redelivery finds out</td></tr>
 * </table>
 *
 * <p>What it does not do: it does not order messages (Kafka keeps per-partition order, and the
 * ordering headers are there for {@code KeyedHistory} or {@code LatestState} inside the effect); it
 * remembers a work ID only for the consumer's inbox horizon ({@link Inbox#setHorizon}), which must
 * outlast every redelivery and redrive; it cannot make a call to a third system exactly-once. The
 * messages of one consumer name must have one payload per work ID. Thread-safe; share one instance.
 */
public final class BrokerInbox {
  /** What happened to one message. */
  public enum Status {
    /** First delivery: the effect ran and, with {@link #apply}, its transaction committed. */
    APPLIED,
    /** A repeat of an applied message: the effect did not run, nothing was written. */
    DUPLICATE,
    /** The fence refused the message's token: nothing was written, and nothing ever will be. */
    STALE
  }

  /**
   * What the inbox did with one message.
   *
   * @param workId the message's work ID
   * @param status applied, duplicate or stale
   * @param fence the fence's answer, or {@code null} when the message carried no token or was a
   *     duplicate (a repeat is answered before the fence is asked)
   */
  public record Result(String workId, Status status, FenceResult fence) {}

  private final DataSource dataSource;
  private final String consumer;
  private final Inbox inbox;
  private final Fence fence;
  private final String timeouts;
  private final RelayTracing tracing;

  private BrokerInbox(Builder b) {
    this.dataSource = b.dataSource;
    this.tracing = b.tracing;
    this.consumer = b.consumer;
    this.inbox = Inbox.builder().schema(b.schema).maxPayloadBytes(b.maxPayloadBytes).build();
    this.fence = Fence.forSchema(b.schema);
    // The helper's own transaction is bounded (SET LOCAL: a pooled connection keeps the
    // application's settings afterwards).
    this.timeouts =
        "SET LOCAL statement_timeout = "
            + b.statementTimeout.toMillis()
            + "; SET LOCAL lock_timeout = "
            + b.lockTimeout.toMillis();
  }

  /**
   * A builder for an inbox helper; {@code dataSource} is the consumer's own database, holding
   * Relay's inbox tables. It may be {@code null} when only {@link #applyIn} is used.
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Configures a {@link BrokerInbox}; validated at {@link #build()}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String consumer;
    private String schema = "relay";
    private int maxPayloadBytes = Inbox.DEFAULT_MAX_PAYLOAD_BYTES;
    private Duration statementTimeout = Duration.ofSeconds(30);
    private Duration lockTimeout = Duration.ofSeconds(10);
    private RelayTracing tracing = RelayTracing.NONE;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The inbox consumer name (required), 1-100 characters from {@code A-Z a-z 0-9 . _ - :}. */
    public Builder consumer(String consumer) {
      this.consumer = consumer;
      return this;
    }

    /** The schema holding the inbox and fence tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The largest payload accepted, in UTF-8 bytes (default 1 MiB). */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      this.maxPayloadBytes = maxPayloadBytes;
      return this;
    }

    /** The longest one statement of {@link #apply}'s transaction may run, 1 ms to 1 h (30 s). */
    public Builder statementTimeout(Duration statementTimeout) {
      this.statementTimeout = statementTimeout;
      return this;
    }

    /** The longest {@link #apply} waits for a row lock, 1 ms to 1 h (default 10 s). */
    public Builder lockTimeout(Duration lockTimeout) {
      this.lockTimeout = lockTimeout;
      return this;
    }

    /**
     * The tracing hook (default {@link RelayTracing#NONE}): a message applied with {@link
     * #apply(BrokerHeaders.Lookup, String, BrokerEffect)} is applied inside the scope it opens for
     * the message's {@code traceparent}/{@code tracestate} headers, so the consumer's span
     * continues the publisher's trace.
     */
    public Builder tracing(RelayTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /** Validates the settings and builds the helper. */
    public BrokerInbox build() {
      if (consumer == null || !consumer.matches("[A-Za-z0-9._:-]{1,100}")) {
        throw new InvalidConfigurationException(
            "consumer", "must be 1-100 characters from A-Z a-z 0-9 . _ - :, was " + consumer);
      }
      requireMillis("statementTimeout", statementTimeout);
      requireMillis("lockTimeout", lockTimeout);
      return new BrokerInbox(this);
    }

    private static void requireMillis(String name, Duration d) {
      if (d == null || d.toMillis() < 1 || d.toMillis() > 3_600_000) {
        throw new InvalidConfigurationException(name, "must be between 1 ms and 1 hour, was " + d);
      }
    }
  }

  /** The consumer name. */
  public String consumer() {
    return consumer;
  }

  /**
   * Reads the message's headers and applies it in a transaction of its own on a connection from the
   * data source; see the class comment. When this returns, the transaction has committed (or had
   * nothing to write): acknowledge the message then.
   *
   * @param headers how to read the message's headers
   * @param payload the payload (JSON text)
   * @param effect the consumer's writes
   * @return applied, duplicate or stale
   */
  public Result apply(BrokerHeaders.Lookup headers, String payload, BrokerEffect effect) {
    BrokerDelivery delivery = BrokerDelivery.read(headers, payload);
    return traced(headers, delivery, () -> apply(delivery, effect));
  }

  /**
   * Reads the message's headers and applies it in the caller's open transaction on {@code c}, as
   * {@link #applyIn(Connection, BrokerDelivery, BrokerEffect)} does, inside the scope the tracing
   * hook opens for the message's {@code traceparent}/{@code tracestate} headers (so the consumer's
   * span continues the publisher's trace). This is the call for consumers that apply several
   * messages in one transaction (Kafka's {@code KafkaInboxConsumer}).
   *
   * @param c the consumer's connection, in its open transaction (not auto-commit)
   * @param headers how to read the message's headers
   * @param payload the payload (JSON text)
   * @param effect the consumer's writes
   * @return applied, duplicate or stale
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   */
  public Result applyIn(
      Connection c, BrokerHeaders.Lookup headers, String payload, BrokerEffect effect) {
    BrokerDelivery delivery = BrokerDelivery.read(headers, payload);
    return traced(headers, delivery, () -> applyIn(c, delivery, effect));
  }

  /** Runs {@code apply} in the tracing hook's scope for the message's trace headers. */
  private Result traced(
      BrokerHeaders.Lookup headers, BrokerDelivery delivery, Supplier<Result> apply) {
    if (tracing == RelayTracing.NONE) {
      return apply.get(); // no tracer: no carrier is read, no scope is opened
    }
    Map<String, String> carrier = RelayTracing.headers(headers::value);
    RelayTracing.Scope scope = tracing.enterDelivery(carrier, delivery.workId(), consumer);
    try {
      return apply.get();
    } finally {
      if (scope != null) {
        scope.close();
      }
    }
  }

  /**
   * Applies an already read message in a transaction of its own; see {@link #apply(
   * BrokerHeaders.Lookup, String, BrokerEffect)}.
   *
   * @param delivery the message
   * @param effect the consumer's writes
   * @return applied, duplicate or stale
   */
  public Result apply(BrokerDelivery delivery, BrokerEffect effect) {
    if (dataSource == null) {
      throw new InvalidConfigurationException(
          "dataSource", "is null: use applyIn(connection, ...) or build with a data source");
    }
    Objects.requireNonNull(delivery, "delivery");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      boolean ended = false;
      try {
        try (Statement s = c.createStatement()) {
          s.execute(timeouts);
        }
        Result r = applyIn(c, delivery, effect);
        try {
          c.commit();
        } catch (SQLException e) {
          ended = true;
          throw new CommitOutcomeUnknownException(
              "COMMIT of message '" + delivery.workId() + "' got no answer: outcome unknown",
              e.getSQLState(),
              e);
        }
        ended = true;
        return r;
      } finally {
        if (!ended) {
          rollbackQuietly(c);
        }
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new RetryableException(
          "message '" + delivery.workId() + "' not applied: " + e.getMessage(), e.getSQLState(), e);
    }
  }

  /**
   * Applies the message in the caller's open transaction on {@code c}; the caller commits, and
   * acknowledges the message after its commit. A stale token, a duplicate or an exception leaves
   * the caller's transaction as it was before this call (its own writes are undone to a savepoint);
   * nothing else of the caller's transaction is rolled back.
   *
   * @param c the consumer's connection, in its open transaction (not auto-commit)
   * @param delivery the message
   * @param effect the consumer's writes
   * @return applied, duplicate or stale
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   */
  public Result applyIn(Connection c, BrokerDelivery delivery, BrokerEffect effect) {
    Objects.requireNonNull(delivery, "delivery");
    if (effect == null) {
      throw new InvalidReceiverInputException("effect", "is null");
    }
    Savepoint savepoint = savepoint(c);
    FenceResult[] fenced = new FenceResult[1];
    Result result;
    try {
      InboxResult r =
          inbox.process(
              c,
              consumer,
              delivery.workId(),
              delivery.payload(),
              tx -> {
                if (delivery.fenced()) {
                  FenceResult f =
                      fence.advance(tx, delivery.fencingResource(), delivery.fencingToken());
                  fenced[0] = f;
                  if (f.refused()) {
                    throw new StaleToken();
                  }
                }
                effect.apply(tx, delivery);
                return "null";
              });
      result =
          new Result(delivery.workId(), r.applied() ? Status.APPLIED : Status.DUPLICATE, fenced[0]);
    } catch (StaleToken e) {
      result = new Result(delivery.workId(), Status.STALE, fenced[0]);
    } catch (RuntimeException e) {
      try {
        c.rollback(savepoint);
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    try {
      if (result.status() == Status.APPLIED) {
        c.releaseSavepoint(savepoint);
      } else {
        c.rollback(savepoint); // the stale message's inbox record goes; a duplicate wrote nothing
      }
    } catch (SQLException e) {
      throw new RetryableException(
          "could not end the savepoint of message '" + delivery.workId() + "': " + e.getMessage(),
          e.getSQLState(),
          e);
    }
    return result;
  }

  /** Thrown inside the inbox's effect to undo the inbox record when the fence refuses. */
  private static final class StaleToken extends RuntimeException {
    private static final long serialVersionUID = 1L;

    StaleToken() {
      super(null, null, false, false);
    }
  }

  private static Savepoint savepoint(Connection c) {
    try {
      if (c == null || c.isClosed() || c.getAutoCommit()) {
        throw new TransactionRequiredException(
            "a broker inbox needs an open transaction: the connection is closed or in auto-commit");
      }
      return c.setSavepoint();
    } catch (SQLException e) {
      throw new RetryableException(
          "could not set a savepoint: " + e.getMessage(), e.getSQLState(), e);
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // A broken connection: the server rolls back the unfinished transaction by itself.
    }
  }

  /** Whether {@code e} means the message can never be applied as it is (dead-letter it). */
  public static boolean isPoison(RuntimeException e) {
    return e instanceof InvalidReceiverInputException || e instanceof PayloadMismatchException;
  }
}
