package dev.relay.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.RelayTracing;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerEffect;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The consumer loop: the inbox per record, offsets only after the database commit. */
@RelayDatabaseTest
class KafkaInboxConsumerTest {
  static KafkaBroker broker;
  private String topic;
  private String group;
  private String schema;
  private final List<KafkaInboxConsumer> loops = new ArrayList<>();

  @BeforeAll
  static void broker() throws Exception {
    broker = SharedBroker.get();
  }

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    topic = "c-" + UUID.randomUUID();
    group = "g-" + UUID.randomUUID();
    broker.createTopic(topic, 1, Map.of());
    db.execute("CREATE TABLE {schema}.applied (seq bigserial, work_id text, payload text)");
    schema = db.schema();
  }

  @AfterEach
  void closeLoops() {
    loops.forEach(KafkaInboxConsumer::close);
  }

  private BrokerEffect record() {
    return (tx, d) -> {
      try (PreparedStatement ps =
          tx.prepareStatement(
              "INSERT INTO " + schema + ".applied (work_id, payload) VALUES (?, ?)")) {
        ps.setString(1, d.workId());
        ps.setString(2, d.payload());
        ps.executeUpdate();
      }
    };
  }

  private KafkaInboxConsumer.Builder loop(TestDatabase db) {
    Map<String, Object> c = new HashMap<>(broker.client());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    return KafkaInboxConsumer.builder(
            c,
            db.dataSource(),
            BrokerInbox.builder(db.dataSource()).consumer("ledger").schema(db.schema()).build())
        .topics(List.of(topic))
        .retryBackoff(Duration.ofMillis(200))
        .effect(record());
  }

  private KafkaInboxConsumer started(KafkaInboxConsumer.Builder b) {
    KafkaInboxConsumer l = b.build();
    loops.add(l);
    return l;
  }

  /** Publishes raw records, as a Relay transport (or any sender of the headers) would. */
  private void publish(String... workIdAndPayload) throws Exception {
    try (KafkaProducer<byte[], byte[]> p =
        new KafkaProducer<>(
            broker.client(), new ByteArraySerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < workIdAndPayload.length; i += 2) {
        RecordHeaders h = new RecordHeaders();
        if (workIdAndPayload[i] != null) {
          h.add(BrokerHeaders.WORK_ID, BrokerHeaders.encode(workIdAndPayload[i]));
        }
        p.send(
                new ProducerRecord<byte[], byte[]>(
                    topic, null, null, workIdAndPayload[i + 1].getBytes(StandardCharsets.UTF_8), h))
            .get(30, TimeUnit.SECONDS);
      }
    }
  }

  private long committedOffset() throws Exception {
    try (Admin admin = Admin.create(broker.client())) {
      OffsetAndMetadata o =
          admin
              .listConsumerGroupOffsets(group)
              .partitionsToOffsetAndMetadata()
              .get(30, TimeUnit.SECONDS)
              .get(new TopicPartition(topic, 0));
      return o == null ? 0 : o.offset();
    }
  }

  private static List<String> applied(TestDatabase db) throws Exception {
    String s = db.queryString("SELECT string_agg(work_id, ',' ORDER BY seq) FROM {schema}.applied");
    return s == null ? List.of() : List.of(s.split(","));
  }

  @Test
  void aRepeatedRecordAppliesOnceAndTheOffsetIsCommittedAfterTheTransaction(TestDatabase db)
      throws Exception {
    publish("w-1", "{\"a\":1}", "w-1", "{\"a\":1}", "w-2", "{}");
    KafkaInboxConsumer loop = started(loop(db));
    List<KafkaInboxConsumer.PollResult> polls = new ArrayList<>();

    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              polls.add(loop.pollOnce(Duration.ofMillis(200)));
              return committedOffset() == 3;
            });

    assertThat(applied(db)).containsExactly("w-1", "w-2");
    assertThat(polls.stream().mapToInt(KafkaInboxConsumer.PollResult::duplicates).sum())
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'ledger'"))
        .isEqualTo(2);
  }

  @Test
  void aFailedEffectRewindsItsPartitionAndCommitsOnlyWhatWasApplied(TestDatabase db)
      throws Exception {
    publish("w-1", "{}", "w-2", "{}", "w-3", "{}");
    AtomicInteger failures = new AtomicInteger();
    BrokerEffect effect = record();
    KafkaInboxConsumer loop =
        started(
            loop(db)
                .effect(
                    (tx, d) -> {
                      if (d.workId().equals("w-2") && failures.getAndIncrement() == 0) {
                        throw new IllegalStateException("ledger unavailable");
                      }
                      effect.apply(tx, d);
                    }));

    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> loop.pollOnce(Duration.ofMillis(200)).failed() == 1);
    assertThat(applied(db)).containsExactly("w-1");
    assertThat(committedOffset()).isEqualTo(1); // w-2 (offset 1) is next, not past it

    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              loop.pollOnce(Duration.ofMillis(200));
              return committedOffset() == 3;
            });
    assertThat(applied(db)).containsExactly("w-1", "w-2", "w-3");
  }

  @Test
  void aPoisonRecordHoldsItsPartitionUntilAHandlerTakesIt(TestDatabase db) throws Exception {
    publish(null, "{}", "w-2", "{}");
    KafkaInboxConsumer holding = started(loop(db));
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> holding.pollOnce(Duration.ofMillis(200)).failed() == 1);
    holding.close();
    loops.remove(holding);
    assertThat(applied(db)).isEmpty();
    assertThat(committedOffset()).isZero();

    List<String> deadLetters = new ArrayList<>();
    KafkaInboxConsumer skipping =
        started(
            loop(db)
                .poison((r, problem) -> deadLetters.add(r.offset() + " " + problem.getMessage())));
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              skipping.pollOnce(Duration.ofMillis(200));
              return committedOffset() == 2;
            });
    assertThat(applied(db)).containsExactly("w-2");
    assertThat(deadLetters)
        .singleElement()
        .asString()
        .startsWith("0 ")
        .contains(BrokerHeaders.WORK_ID);
  }

  @Test
  void theStartedLoopAppliesUntilClosed(TestDatabase db) throws Exception {
    KafkaInboxConsumer loop = started(loop(db).pollTimeout(Duration.ofMillis(100)));
    loop.start();
    publish("w-1", "{}", "w-2", "{}");
    await().atMost(Duration.ofSeconds(60)).until(() -> applied(db).size() == 2);
    await().atMost(Duration.ofSeconds(60)).until(() -> committedOffset() == 2);
  }

  @Test
  void eachRecordIsAppliedInTheTracingScopeOfItsTraceparent(TestDatabase db) throws Exception {
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    try (KafkaProducer<byte[], byte[]> p =
        new KafkaProducer<>(
            broker.client(), new ByteArraySerializer(), new ByteArraySerializer())) {
      RecordHeaders h = new RecordHeaders();
      h.add(BrokerHeaders.WORK_ID, BrokerHeaders.encode("w-1"));
      h.add("traceparent", BrokerHeaders.encode(traceparent));
      p.send(new ProducerRecord<byte[], byte[]>(topic, null, null, "{}".getBytes(), h))
          .get(30, TimeUnit.SECONDS);
    }
    // a tracing hook that records what it was given and whether the effect ran inside its scope
    List<String> seen = new ArrayList<>();
    AtomicInteger open = new AtomicInteger();
    RelayTracing tracing =
        new RelayTracing() {
          @Override
          public Scope enterDelivery(Map<String, String> carrier, String workId, String receiver) {
            seen.add(receiver + " " + workId + " " + carrier);
            open.incrementAndGet();
            return open::decrementAndGet;
          }
        };
    Map<String, Object> c = new HashMap<>(broker.client());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    BrokerEffect effect = record();
    KafkaInboxConsumer loop =
        started(
            KafkaInboxConsumer.builder(
                    c,
                    db.dataSource(),
                    BrokerInbox.builder(db.dataSource())
                        .consumer("ledger")
                        .schema(db.schema())
                        .tracing(tracing)
                        .build())
                .topics(List.of(topic))
                .effect(
                    (tx, d) -> {
                      seen.add("effect in scope: " + (open.get() == 1));
                      effect.apply(tx, d);
                    }));

    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              loop.pollOnce(Duration.ofMillis(200));
              return committedOffset() == 1;
            });
    assertThat(seen)
        .containsExactly("ledger w-1 {traceparent=" + traceparent + "}", "effect in scope: true");
    assertThat(open).hasValue(0);
  }
}
