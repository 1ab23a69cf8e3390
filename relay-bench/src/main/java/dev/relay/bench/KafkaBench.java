package dev.relay.bench;

import static dev.relay.bench.RelayBench.params;

import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.kafka.KafkaTransport;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publish throughput to Kafka ({@code --kafka host:port}): Relay claiming, publishing through
 * {@link KafkaTransport} and completing, against the lesser of the raw producer (same durability:
 * idempotent, {@code acks=all}, the same linger) and Relay's own no-op burn-down at the same
 * concurrency, run for run ({@link PublishComparison}). Each run publishes to a new topic of
 * {@value #PARTITIONS} partitions.
 */
final class KafkaBench {
  static final int PARTITIONS = 4;

  private final String bootstrap;
  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  KafkaBench(String bootstrap, RelayBench relay, Sizes sizes, Report report) {
    this.bootstrap = bootstrap;
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  void publish() throws Exception {
    Map<String, Object> p =
        params(
            "jobs",
            sizes.jobs(),
            "instances",
            1,
            "workers",
            sizes.workers(),
            "partitions",
            PARTITIONS);
    PublishComparison.run(
        report,
        relay,
        sizes,
        "kafka",
        p,
        "raw-producer",
        "records/s",
        () -> raw(newTopic()),
        () -> {
          try (KafkaTransport transport =
              KafkaTransport.builder(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))
                  .topic(RelayBench.KIND, newTopic())
                  .build()) {
            return PublishComparison.through(relay, sizes, transport);
          }
        });
  }

  /** The raw producer: every record sent at once, timed from the first send to the last ack. */
  private double raw(String topic) throws Exception {
    Map<String, Object> c =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            true,
            ProducerConfig.ACKS_CONFIG,
            "all",
            ProducerConfig.LINGER_MS_CONFIG,
            5);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(c, new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<RecordMetadata>> acks = new ArrayList<>(sizes.jobs());
      long t0 = System.nanoTime();
      for (int i = 1; i <= sizes.jobs(); i++) {
        String id = "b-" + i;
        RecordHeaders h = new RecordHeaders();
        h.add(BrokerHeaders.WORK_ID, BrokerHeaders.encode(id));
        h.add(BrokerHeaders.KIND, BrokerHeaders.encode(RelayBench.KIND));
        h.add(BrokerHeaders.GENERATION, BrokerHeaders.encode("1"));
        acks.add(
            producer.send(
                new ProducerRecord<>(
                    topic,
                    null,
                    id.getBytes(StandardCharsets.UTF_8),
                    ("{\"n\": " + i + "}").getBytes(StandardCharsets.UTF_8),
                    h)));
      }
      for (Future<RecordMetadata> f : acks) {
        f.get(2, TimeUnit.MINUTES);
      }
      return sizes.jobs() / RelayBench.seconds(t0);
    }
  }

  private String newTopic() throws Exception {
    String topic = "relay-bench-" + UUID.randomUUID();
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin
          .createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1)))
          .all()
          .get(60, TimeUnit.SECONDS);
      // Produce only once every partition's leader takes writes: list-offsets is answered only
      // by a leader that has applied its leadership. Producing earlier can leave an idempotent
      // producer stuck on OUT_OF_ORDER_SEQUENCE_NUMBER until delivery.timeout.ms (KAFKA-15591).
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int p = 0; p < PARTITIONS; p++) {
        latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
      }
      admin.listOffsets(latest).all().get(60, TimeUnit.SECONDS);
    }
    return topic;
  }
}
