package dev.relay.docs;

import dev.relay.Claim;
import dev.relay.KindPolicy;
import dev.relay.Relay;
import dev.relay.transport.broker.BrokerDelivery;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.kafka.KafkaInboxConsumer;
import dev.relay.transport.kafka.KafkaTransport;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/** The code of docs/transports.md: the shared broker contract and the Kafka transport. */
final class KafkaSnippets {
  private KafkaSnippets() {}

  /** The consumer's own write for one message. */
  static void recordOrder(Connection tx, String payloadJson) {}

  /** Where a fenced kind keeps its token: in the payload, allocated at enqueue. */
  static long tokenOf(Claim claim) {
    return 0;
  }

  static Relay producerSide(DataSource dataSource) {
    // docs:begin kafka-transport
    KafkaTransport kafka = KafkaTransport.builder(Map.of("bootstrap.servers", "127.0.0.1:9092"))
        .topic("order_placed", "orders")                 // topic per kind
        .topics(kind -> "relay." + kind)                 // the rest (optional)
        .build();                                        // idempotent, acks=all: enforced
    Relay relay = Relay.builder(dataSource)
        .handle("order_placed", KindPolicy.DEFAULT.withMaxRunTime(Duration.ofSeconds(30)), kafka)
        .build();                                        // batches of up to 100 records per slot
    relay.start();                                       // on shutdown: relay.close(); kafka.close();
    // docs:end
    return relay;
  }

  static KafkaTransport fenced() {
    // docs:begin kafka-fencing
    KafkaTransport kafka = KafkaTransport.builder(Map.of("bootstrap.servers", "127.0.0.1:9092"))
        .topic("set_mailbox", "mailbox-settings")
        .fencing(claim -> Optional.of(new BrokerHeaders.Fencing("mailbox-1", tokenOf(claim))))
        .build();
    // docs:end
    return kafka;
  }

  static KafkaInboxConsumer consumerSide(DataSource dataSource) {
    // docs:begin kafka-consumer
    BrokerInbox inbox = BrokerInbox.builder(dataSource).consumer("billing").build();
    KafkaInboxConsumer loop = KafkaInboxConsumer.builder(
            Map.of("bootstrap.servers", "127.0.0.1:9092", "group.id", "billing"), dataSource, inbox)
        .topics(List.of("orders"))
        .effect((tx, delivery) -> recordOrder(tx, delivery.payload()))   // same transaction
        .poison((record, problem) -> { /* write it to a dead-letter table, then skip it */ })
        .build();
    loop.start();                                        // on shutdown: loop.close()
    // docs:end
    return loop;
  }

  static void ownLoop(KafkaConsumer<byte[], byte[]> consumer, BrokerInbox inbox) {
    // docs:begin broker-inbox-own-loop
    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofSeconds(1));
    for (ConsumerRecord<byte[], byte[]> r : records) {
      BrokerInbox.Result result = inbox.apply(                // its own transaction, committed
          KafkaInboxConsumer.headers(r), new String(r.value(), java.nio.charset.StandardCharsets.UTF_8),
          (tx, delivery) -> recordOrder(tx, delivery.payload()));
      // result.status(): APPLIED, DUPLICATE (a redelivery) or STALE (refused by its fence)
    }
    consumer.commitSync();                                   // only after every transaction committed
    // docs:end
  }

  static void joinTransaction(
      BrokerInbox inbox, Connection c, Map<String, String> headers, String payload)
      throws java.sql.SQLException {
    // docs:begin broker-inbox-join
    c.setAutoCommit(false);
    BrokerDelivery d = BrokerDelivery.read(headers::get, payload);  // checks the headers
    inbox.applyIn(c, d, (tx, delivery) -> recordOrder(tx, delivery.payload()));
    c.commit();                                                     // then ack the message
    // docs:end
  }
}
