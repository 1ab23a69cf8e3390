package dev.relay.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.relay.InvalidConfigurationException;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.InvalidReceiverInputException;
import dev.relay.receiver.PayloadMismatchException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consuming side: applies each delivery through Relay's {@link Inbox} in the consumer's own
 * database transaction, and acknowledges it to RabbitMQ only after that transaction committed.
 *
 * <pre>{@code
 * RabbitInbox billing = RabbitInbox.builder(dataSource)
 *     .consumer("billing")
 *     .effect((tx, message) -> billOrder(tx, message.payload()))   // writes on tx, returns JSON
 *     .build();
 * billing.consume(channel, "orders.billing", 50);                   // manual acks, prefetch 50
 * }</pre>
 *
 * <p>Per delivery, in one transaction on a connection from the data source: when the message
 * carries Relay's fencing headers, the {@link Fence} is advanced (a lower token than one already
 * seen is stale: rolled back, acknowledged, not applied); then the inbox records the work ID and
 * runs the effect, or, for a work ID it has already applied, returns the saved result without
 * running it. After the commit the delivery is acknowledged. A redelivery (the ack was lost, the
 * publisher repeated an attempt whose confirm it never saw) therefore applies once.
 *
 * <table>
 *   <caption>Endings</caption>
 *   <tr><th>Case</th><th>Database</th><th>RabbitMQ</th></tr>
 *   <tr><td>applied or duplicate</td><td>committed</td><td>ack</td></tr>
 *   <tr><td>stale fencing token</td><td>rolled back</td><td>ack</td></tr>
 *   <tr><td>changed payload under a used work ID, invalid message</td><td>rolled back</td>
 *       <td>reject without requeue (dead-lettered if the queue has a dead-letter exchange)</td></tr>
 *   <tr><td>effect failed, database error</td><td>rolled back</td><td>nack with requeue</td></tr>
 *   <tr><td>crash or lost channel before the ack</td><td>committed</td><td>redelivered; the inbox
 *       answers it as a duplicate</td></tr>
 * </table>
 *
 * <p>What it does not do: it cannot make a call to a third system exactly-once (only the writes on
 * the transaction's connection are); it remembers work IDs only for the consumer's inbox horizon;
 * it does not reorder: with several consumers on a queue, or after a requeue, deliveries of one
 * ordering key can arrive out of order (the effect can check {@link Message#sequence()}).
 * Deliveries on one channel are handled one at a time, on the client's consumer thread.
 */
public final class RabbitInbox {
  private static final Logger log = LoggerFactory.getLogger(RabbitInbox.class);

  /** The consumer's writes for one message, on the inbox's transaction. */
  @FunctionalInterface
  public interface Effect {
    /**
     * Applies the message.
     *
     * @param tx the open transaction (do not commit or roll it back)
     * @param message the delivery
     * @return the result as JSON text, saved and returned to repeats
     * @throws Exception to roll back and requeue the delivery
     */
    String apply(Connection tx, Message message) throws Exception;
  }

  /**
   * One delivery, with Relay's headers read.
   *
   * @param workId the work ID (message-id, or Relay's work-ID header)
   * @param kind the kind, or {@code null}
   * @param payload the body as UTF-8 text (JSON)
   * @param orderingKey the ordering key, or {@code null}
   * @param sequence the sequence within the key, or {@code null}
   * @param previousSequence the key's previous delivered sequence, or {@code null}
   * @param fencingResource the fencing resource, or {@code null}
   * @param fencingToken the fencing token, or {@code null}
   * @param redelivered whether RabbitMQ marked it redelivered
   */
  public record Message(
      String workId,
      String kind,
      String payload,
      String orderingKey,
      Long sequence,
      Long previousSequence,
      String fencingResource,
      Long fencingToken,
      boolean redelivered) {}

  /** How one delivery ended. */
  public enum Ending {
    /** Applied now, committed, acknowledged. */
    APPLIED,
    /** Applied before; the saved result returned, acknowledged. */
    DUPLICATE,
    /** A lower fencing token than one already seen: not applied, acknowledged. */
    STALE,
    /** Refused for good (changed payload, invalid): rejected without requeue. */
    REJECTED,
    /** Failed (effect or database): rolled back, requeued. */
    REQUEUED
  }

  private final DataSource dataSource;
  private final Inbox inbox;
  private final Fence fence;
  private final String consumer;
  private final Effect effect;

  private RabbitInbox(Builder b) {
    this.dataSource = b.dataSource;
    this.inbox = Inbox.builder().schema(b.schema).build();
    this.fence = Fence.forSchema(b.schema);
    this.consumer = b.consumer;
    this.effect = b.effect;
  }

  /** A builder on the consumer's database (which holds Relay's inbox tables). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /** Configures a {@link RabbitInbox}; validated at {@link #build()}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = "relay";
    private String consumer;
    private Effect effect;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The schema of the inbox and fence tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The consumer's name in the inbox: one name per component that applies the messages. */
    public Builder consumer(String consumer) {
      this.consumer = consumer;
      return this;
    }

    /** The consumer's writes. */
    public Builder effect(Effect effect) {
      this.effect = effect;
      return this;
    }

    /** Validates and builds. */
    public RabbitInbox build() {
      if (consumer == null || consumer.isBlank()) {
        throw new InvalidConfigurationException("consumer", "is empty");
      }
      if (effect == null) {
        throw new InvalidConfigurationException("effect", "is null");
      }
      return new RabbitInbox(this);
    }
  }

  /**
   * Starts consuming {@code queue} on {@code channel} with manual acknowledgements and at most
   * {@code prefetch} unacknowledged deliveries.
   *
   * @return the consumer tag
   * @throws IOException if RabbitMQ refuses
   */
  public String consume(Channel channel, String queue, int prefetch) throws IOException {
    if (prefetch < 1 || prefetch > 65_535) {
      throw new InvalidConfigurationException(
          "prefetch", "must be between 1 and 65535, was " + prefetch);
    }
    channel.basicQos(prefetch);
    return channel.basicConsume(
        queue,
        false,
        new DefaultConsumer(channel) {
          @Override
          public void handleDelivery(
              String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
              throws IOException {
            handle(channel, envelope, props, body);
          }
        });
  }

  /**
   * Applies one delivery and settles it on {@code channel} (ack, reject or nack): for consumers
   * that receive deliveries themselves.
   *
   * @return how it ended
   * @throws IOException if the settlement cannot be sent (the delivery is then redelivered)
   */
  public Ending handle(Channel channel, Envelope envelope, AMQP.BasicProperties props, byte[] body)
      throws IOException {
    long tag = envelope.getDeliveryTag();
    Ending ending;
    try {
      ending = apply(read(envelope, props, body));
    } catch (PayloadMismatchException | InvalidReceiverInputException e) {
      log.warn("rejecting delivery {} for good: {}", props.getMessageId(), e.getMessage());
      channel.basicReject(tag, false);
      return Ending.REJECTED;
    } catch (Exception e) {
      log.warn("delivery {} failed, requeued: {}", props.getMessageId(), e.toString());
      channel.basicNack(tag, false, true);
      return Ending.REQUEUED;
    }
    channel.basicAck(tag, false);
    return ending;
  }

  private Ending apply(Message m) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        if (m.fencingResource() != null && m.fencingToken() != null) {
          FenceResult f = fence.advance(c, m.fencingResource(), m.fencingToken());
          if (f.refused()) {
            c.rollback();
            return Ending.STALE;
          }
        }
        InboxResult r =
            inbox.process(c, consumer, m.workId(), m.payload(), tx -> effect.apply(tx, m));
        c.commit();
        return r.applied() ? Ending.APPLIED : Ending.DUPLICATE;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  static Message read(Envelope envelope, AMQP.BasicProperties props, byte[] body) {
    Map<String, Object> h = props.getHeaders() == null ? Map.of() : props.getHeaders();
    String workId = text(h, MessageHeaders.WORK_ID);
    if (workId == null) {
      workId = props.getMessageId();
    }
    if (workId == null) {
      throw new InvalidReceiverInputException("message-id", "is missing: not a Relay message");
    }
    return new Message(
        workId,
        text(h, MessageHeaders.KIND),
        new String(body, StandardCharsets.UTF_8),
        text(h, MessageHeaders.ORDERING_KEY),
        number(h, MessageHeaders.SEQUENCE),
        number(h, MessageHeaders.PREVIOUS_SEQUENCE),
        text(h, MessageHeaders.FENCING_RESOURCE),
        number(h, MessageHeaders.FENCING_TOKEN),
        envelope.isRedeliver());
  }

  private static String text(Map<String, Object> h, String name) {
    Object v = h.get(name);
    return v == null ? null : v.toString(); // AMQP strings arrive as LongString
  }

  private static Long number(Map<String, Object> h, String name) {
    String v = text(h, name);
    if (v == null) {
      return null;
    }
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new InvalidReceiverInputException(name, "is not a number: " + v);
    }
  }
}
