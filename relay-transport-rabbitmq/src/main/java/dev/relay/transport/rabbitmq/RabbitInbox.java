package dev.relay.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.relay.InvalidConfigurationException;
import dev.relay.transport.broker.BrokerEffect;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consuming side for RabbitMQ: applies each delivery through a {@link BrokerInbox} (Relay's
 * inbox, and the fence when the message carries a token) in the consumer's own database
 * transaction, and acknowledges the delivery only after that transaction committed.
 *
 * <pre>{@code
 * BrokerInbox inbox = BrokerInbox.builder(dataSource).consumer("billing").build();
 * RabbitInbox billing = RabbitInbox.of(inbox, (tx, delivery) -> bill(tx, delivery.payload()));
 * billing.consume(channel, "orders.billing", 50);       // manual acks, at most 50 unacked
 * }</pre>
 *
 * <table>
 *   <caption>How a delivery ends</caption>
 *   <tr><th>Case</th><th>Database</th><th>RabbitMQ</th></tr>
 *   <tr><td>first delivery of a work ID</td><td>applied, committed</td><td>ack</td></tr>
 *   <tr><td>a repeat (redelivery, or a publish repeated after a lost confirm)</td><td>nothing
 *       written</td><td>ack</td></tr>
 *   <tr><td>a fencing token lower than one already seen</td><td>nothing written</td><td>ack</td></tr>
 *   <tr><td>invalid headers, a changed payload under a used work ID</td><td>nothing written</td>
 *       <td>reject without requeue (dead-lettered if the queue has a dead-letter exchange)</td></tr>
 *   <tr><td>the effect threw, a database error, a COMMIT without answer</td><td>rolled back (or
 *       unknown)</td><td>nack with requeue: the redelivery applies it or finds it applied</td></tr>
 *   <tr><td>the channel or process is lost after the commit, before the ack</td><td>committed</td>
 *       <td>redelivered, then answered as a repeat</td></tr>
 * </table>
 *
 * <p>The work ID is the {@value BrokerHeaders#WORK_ID} header, or the AMQP message-id when a sender
 * set only that. Deliveries on one channel are applied one at a time, on the client's consumer
 * thread, in delivery order.
 *
 * <p>What it does not do: it cannot make a call to a third system exactly-once (only the writes on
 * the transaction's connection are); it remembers work IDs only for the consumer's inbox horizon;
 * it does not restore order: with several consumers on one queue, or after a requeue, deliveries of
 * one ordering key can arrive out of order (the ordering headers are there for {@code KeyedHistory}
 * or {@code LatestState} in the effect). A requeued failure is redelivered at once; a queue with a
 * delivery limit or a dead-letter exchange bounds a message that always fails.
 */
public final class RabbitInbox {
  private static final Logger log = LoggerFactory.getLogger(RabbitInbox.class);

  /** How one delivery ended. */
  public enum Ending {
    /** Applied now, committed, acknowledged. */
    APPLIED,
    /** Applied before: nothing written, acknowledged. */
    DUPLICATE,
    /** A lower fencing token than one already seen: nothing written, acknowledged. */
    STALE,
    /** Can never be applied (invalid, changed payload): rejected without requeue. */
    REJECTED,
    /** Failed (effect or database): rolled back, requeued. */
    REQUEUED
  }

  private final BrokerInbox inbox;
  private final BrokerEffect effect;

  private RabbitInbox(BrokerInbox inbox, BrokerEffect effect) {
    this.inbox = inbox;
    this.effect = effect;
  }

  /**
   * A consumer that applies deliveries through {@code inbox} with {@code effect}.
   *
   * @param inbox the inbox helper (consumer name, database)
   * @param effect the consumer's writes for one message
   * @return the consumer
   */
  public static RabbitInbox of(BrokerInbox inbox, BrokerEffect effect) {
    return new RabbitInbox(
        Objects.requireNonNull(inbox, "inbox"), Objects.requireNonNull(effect, "effect"));
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
   * Applies one delivery and settles it on {@code channel} (ack, reject or nack), for consumers
   * that receive deliveries themselves.
   *
   * @return how it ended
   * @throws IOException if the settlement cannot be sent (RabbitMQ then redelivers the message)
   */
  public Ending handle(Channel channel, Envelope envelope, AMQP.BasicProperties props, byte[] body)
      throws IOException {
    long tag = envelope.getDeliveryTag();
    BrokerInbox.Result result;
    try {
      result = inbox.apply(headers(props), new String(body, StandardCharsets.UTF_8), effect);
    } catch (RuntimeException e) {
      if (BrokerInbox.isPoison(e)) {
        log.warn("rejecting message {} for good: {}", props.getMessageId(), e.getMessage());
        channel.basicReject(tag, false);
        return Ending.REJECTED;
      }
      log.warn("message {} not applied, requeued: {}", props.getMessageId(), e.toString());
      channel.basicNack(tag, false, true);
      return Ending.REQUEUED;
    }
    channel.basicAck(tag, false);
    switch (result.status()) {
      case APPLIED:
        return Ending.APPLIED;
      case DUPLICATE:
        return Ending.DUPLICATE;
      default:
        return Ending.STALE;
    }
  }

  /**
   * The Relay headers of an AMQP message as a {@link BrokerHeaders.Lookup}: AMQP string values as
   * text, and the message-id standing in for a missing work-ID header.
   */
  public static BrokerHeaders.Lookup headers(AMQP.BasicProperties props) {
    Map<String, Object> h = props.getHeaders() == null ? Map.of() : props.getHeaders();
    return name -> {
      Object v = h.get(name);
      if (v == null && BrokerHeaders.WORK_ID.equals(name)) {
        return props.getMessageId();
      }
      if (v instanceof byte[] bytes) {
        return BrokerHeaders.decode(bytes);
      }
      return v == null ? null : v.toString(); // AMQP strings arrive as LongString
    };
  }
}
