package dev.relay.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The consuming side, one delivery at a time, against the machine's RabbitMQ. */
@RelayDatabaseTest
class RabbitInboxTest {
  private Broker broker;

  @BeforeEach
  void connect() throws Exception {
    broker = new Broker();
  }

  @AfterEach
  void disconnect() throws Exception {
    broker.close();
  }

  private static AMQP.BasicProperties message(String workId) {
    return new AMQP.BasicProperties.Builder()
        .messageId(workId)
        .deliveryMode(2)
        .headers(Map.of(BrokerHeaders.WORK_ID, workId, BrokerHeaders.KIND, "order_received"))
        .build();
  }

  private GetResponse next(Channel channel, String queue) {
    return await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> channel.basicGet(queue, false), Objects::nonNull);
  }

  @Test
  void aDeliveryRedeliveredAfterItsCommitIsAckedAsADuplicateWithoutRunningTheEffect(TestDatabase db)
      throws Exception {
    String queue = broker.queue("redeliver");
    broker.channel().basicPublish("", queue, message("order-1"), "{\"order\":1}".getBytes());
    BrokerInbox inbox =
        BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build();
    AtomicInteger effects = new AtomicInteger();
    try (Connection crashing = broker.newConnection("relay-test-crashing-consumer")) {
      GetResponse first = next(crashing.createChannel(), queue);
      // The consumer commits its transaction, then dies before the ack.
      BrokerInbox.Result r =
          inbox.apply(
              RabbitInbox.headers(first.getProps()),
              new String(first.getBody(), StandardCharsets.UTF_8),
              (tx, d) -> effects.incrementAndGet());
      assertThat(r.status()).isEqualTo(BrokerInbox.Status.APPLIED);
    } // closed without the ack: RabbitMQ requeues the message

    RabbitInbox consumer = RabbitInbox.of(inbox, (tx, d) -> effects.incrementAndGet());
    GetResponse again = next(broker.channel(), queue);

    assertThat(again.getEnvelope().isRedeliver()).isTrue();
    assertThat(
            consumer.handle(
                broker.channel(), again.getEnvelope(), again.getProps(), again.getBody()))
        .isEqualTo(RabbitInbox.Ending.DUPLICATE);
    assertThat(effects).hasValue(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> broker.messageCount(queue) == 0);
    assertThat(broker.channel().basicGet(queue, false)).isNull(); // acknowledged, not requeued
  }

  @Test
  void aChangedPayloadUnderAUsedWorkIdIsRejectedWithoutRequeueAndAFailedEffectIsRequeued(
      TestDatabase db) throws Exception {
    String queue = broker.queue("poison");
    BrokerInbox inbox =
        BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build();
    AtomicInteger failures = new AtomicInteger(1);
    RabbitInbox consumer =
        RabbitInbox.of(
            inbox,
            (tx, d) -> {
              if (failures.getAndDecrement() > 0) {
                throw new IllegalStateException("the ledger is locked");
              }
            });
    Channel ch = broker.channel();
    ch.basicPublish("", queue, message("order-1"), "{\"order\":1}".getBytes());

    GetResponse first = next(ch, queue);
    assertThat(consumer.handle(ch, first.getEnvelope(), first.getProps(), first.getBody()))
        .isEqualTo(RabbitInbox.Ending.REQUEUED);
    GetResponse retried = next(ch, queue);
    assertThat(retried.getEnvelope().isRedeliver()).isTrue();
    assertThat(consumer.handle(ch, retried.getEnvelope(), retried.getProps(), retried.getBody()))
        .isEqualTo(RabbitInbox.Ending.APPLIED);

    ch.basicPublish("", queue, message("order-1"), "{\"order\":2}".getBytes());
    GetResponse changed = next(ch, queue);
    assertThat(consumer.handle(ch, changed.getEnvelope(), changed.getProps(), changed.getBody()))
        .isEqualTo(RabbitInbox.Ending.REJECTED);
    await().atMost(Duration.ofSeconds(10)).until(() -> broker.messageCount(queue) == 0);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isEqualTo(1);
  }
}
