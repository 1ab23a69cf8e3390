package dev.relay.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.HeldClaim;
import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import dev.relay.ManualClaims;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerHeaders;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The producer side against a real broker: what a record carries and what each failure becomes. */
@RelayDatabaseTest
class KafkaTransportTest {
  static KafkaBroker broker;

  @BeforeAll
  static void broker() throws Exception {
    broker = SharedBroker.get();
  }

  static String newTopic(int partitions, Map<String, String> configs) throws Exception {
    String topic = "t-" + UUID.randomUUID();
    broker.createTopic(topic, partitions, configs);
    return topic;
  }

  static Map<String, Object> producer() {
    Map<String, Object> c = new HashMap<>(broker.client());
    c.put("delivery.timeout.ms", 15_000);
    c.put("request.timeout.ms", 5_000);
    return c;
  }

  static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int expected) {
    Map<String, Object> c = new HashMap<>(broker.client());
    c.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID());
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      consumer.subscribe(List.of(topic));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
                return out.size() >= expected;
              });
    }
    return out;
  }

  static String header(ConsumerRecord<?, ?> r, String name) {
    return KafkaInboxConsumer.headers(r).value(name);
  }

  static HeldClaim claimOne(TestDatabase db, Work work) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox.builder().schema(db.schema()).build().enqueue(c, work);
      c.commit();
      c.setAutoCommit(true);
      return ManualClaims.forSchema(db.schema())
          .claimNext(c, "w1", "default", work.kind(), Duration.ofSeconds(30))
          .orElseThrow();
    }
  }

  @Nested
  class Publishing {
    @Test
    void anAckedRecordIsDoneAsBrokerAcceptedWithItsHeadersAndWorkIdKey(TestDatabase db)
        throws Exception {
      String topic = newTopic(2, Map.of());
      HeldClaim claim = claimOne(db, Work.of("order-1-ack", "order_received", "{\"n\":1}"));
      Outcome outcome;
      try (KafkaTransport kafka =
          KafkaTransport.builder(producer())
              .topic("order_received", topic)
              .fencing(c -> java.util.Optional.of(new BrokerHeaders.Fencing("mailbox-1", 9)))
              .build()) {
        outcome = kafka.handle(claim);
      }

      assertThat(outcome).isInstanceOf(Outcome.Done.class);
      Outcome.Done done = (Outcome.Done) outcome;
      assertThat(done.resultJson())
          .startsWith(
              "{\"milestone\":\"broker_accepted\",\"broker\":\"kafka\",\"topic\":\"" + topic);
      ConsumerRecord<byte[], byte[]> r = readAll(topic, 1).get(0);
      assertThat(done.receiverRef()).isEqualTo(topic + "-" + r.partition() + "@" + r.offset());
      assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("order-1-ack");
      assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo(claim.payload());
      assertThat(header(r, BrokerHeaders.WORK_ID)).isEqualTo("order-1-ack");
      assertThat(header(r, BrokerHeaders.KIND)).isEqualTo("order_received");
      assertThat(header(r, BrokerHeaders.GENERATION)).isEqualTo(Long.toString(claim.generation()));
      assertThat(header(r, BrokerHeaders.FENCING_RESOURCE)).isEqualTo("mailbox-1");
      assertThat(header(r, BrokerHeaders.FENCING_TOKEN)).isEqualTo("9");
      assertThat(header(r, BrokerHeaders.ORDERING_KEY)).isNull();
    }

    @Test
    void keyedWorkIsKeyedByItsOrderingKey(TestDatabase db) throws Exception {
      String topic = newTopic(4, Map.of());
      HeldClaim claim = claimOne(db, Work.of("line-1", "k", "{}").orderingKey("order-7"));
      try (KafkaTransport kafka = KafkaTransport.builder(producer()).topic("k", topic).build()) {
        assertThat(kafka.handle(claim)).isInstanceOf(Outcome.Done.class);
      }
      ConsumerRecord<byte[], byte[]> r = readAll(topic, 1).get(0);
      assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("order-7");
      assertThat(header(r, BrokerHeaders.ORDERING_KEY)).isEqualTo("order-7");
      assertThat(header(r, BrokerHeaders.SEQUENCE)).isEqualTo(claim.sequence().toString());
    }

    @Test
    void aKindWithoutATopicFailsNotDelivered(TestDatabase db) throws Exception {
      HeldClaim claim = claimOne(db, Work.of("w-1", "unmapped", "{}"));
      try (KafkaTransport kafka =
          KafkaTransport.builder(producer()).topic("other", "t-other").build()) {
        assertThat(kafka.handle(claim))
            .isEqualTo(
                Outcome.fail("no Kafka topic for kind unmapped", Outcome.Effect.NOT_DELIVERED));
      }
    }
  }

  @Nested
  class Failures {
    private final org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]> record =
        new org.apache.kafka.clients.producer.ProducerRecord<>(
            "orders", new byte[3], new byte[1000]);

    @Test
    void aTopicThatDoesNotExistIsRetriedNotDeliveredAfterMaxBlock(TestDatabase db)
        throws Exception {
      HeldClaim claim = claimOne(db, Work.of("w-1", "k", "{}"));
      Map<String, Object> p = producer();
      p.put("max.block.ms", 1_000);
      try (KafkaTransport kafka =
          KafkaTransport.builder(p).topic("k", "missing-" + UUID.randomUUID()).build()) {
        Outcome o = kafka.handle(claim);
        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
        assertThat(((Outcome.Retry) o).reason())
            .startsWith("not queued: ")
            .contains("missing-", "bootstrap.servers", "has connected to a broker");
      }
    }

    @Test
    void aWrongBootstrapAddressSaysSoWhereAMissingTopicReadsTheSame(TestDatabase db)
        throws Exception {
      HeldClaim claim = claimOne(db, Work.of("w-1", "k", "{}"));
      int port;
      try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
        port = closed.getLocalPort(); // bound, then closed: nothing listens there
      }
      Map<String, Object> p = producer();
      p.put("bootstrap.servers", "127.0.0.1:" + port);
      p.put("max.block.ms", 1_000);
      try (KafkaTransport kafka = KafkaTransport.builder(p).topic("k", "orders").build()) {
        Outcome o = kafka.handle(claim);
        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
        assertThat(((Outcome.Retry) o).reason())
            .startsWith("not queued: ")
            .contains("bootstrap.servers 127.0.0.1:" + port, "never connected to a broker");
      }
    }

    @Test
    void aRefusalBeforeTheLogIsNotDeliveredAndAnythingAfterQueueingIsUnknown() {
      assertThat(
              KafkaTransport.outcomeOf(
                  new org.apache.kafka.common.errors.RecordTooLargeException("too big"),
                  record,
                  true))
          .isEqualTo(
              Outcome.fail(
                  "refused: record of 1000 bytes (key 3 bytes) to orders:"
                      + " RecordTooLargeException: too big",
                  Outcome.Effect.NOT_DELIVERED));
      assertThat(
              KafkaTransport.outcomeOf(
                  new org.apache.kafka.common.errors.TopicAuthorizationException("denied"),
                  record,
                  true))
          .isInstanceOfSatisfying(
              Outcome.Retry.class,
              r -> assertThat(r.effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED));
      assertThat(
              KafkaTransport.outcomeOf(
                  new org.apache.kafka.common.errors.TimeoutException("expired"), record, true))
          .isInstanceOfSatisfying(
              Outcome.Retry.class, r -> assertThat(r.effect()).isEqualTo(Outcome.Effect.UNKNOWN));
      assertThat(
              KafkaTransport.outcomeOf(
                  new org.apache.kafka.common.errors.TimeoutException("no metadata"),
                  record,
                  false))
          .isInstanceOfSatisfying(
              Outcome.Retry.class,
              r -> assertThat(r.effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED));
      assertThat(
              KafkaTransport.outcomeOf(
                  new org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException("isr"),
                  record,
                  true))
          .isInstanceOfSatisfying(
              Outcome.Retry.class, r -> assertThat(r.effect()).isEqualTo(Outcome.Effect.UNKNOWN));
    }

    @Test
    void aClaimWithoutRunTimeLeftIsNotSent(TestDatabase db) throws Exception {
      HeldClaim claim = claimOne(db, Work.of("w-1", "k", "{}"));
      try (Connection c = db.connection()) {
        ManualClaims.forSchema(db.schema()).expireLease(c, claim); // the claim knows it is lost
      }
      try (KafkaTransport kafka = KafkaTransport.builder(producer()).topic("k", "t").build()) {
        assertThat(kafka.handle(claim))
            .isEqualTo(
                Outcome.retry(
                    "run time or deadline nearly over before publishing; not sent",
                    Outcome.Effect.NOT_DELIVERED));
      }
    }
  }

  @Nested
  class Oversize {
    @Test
    void publishAllAnswersPerItemAndARecordOverTheClientLimitDoesNotHoldTheOthers(TestDatabase db)
        throws Exception {
      String topic = newTopic(2, Map.of());
      List<HeldClaim> claims = new ArrayList<>();
      claims.add(claimOne(db, Work.of("batch-1", "k", "{\"i\":1}")));
      claims.add(
          claimOne(db, Work.of("batch-big", "k", "{\"blob\":\"" + "x".repeat(30_000) + "\"}")));
      claims.add(claimOne(db, Work.of("batch-2", "k", "{\"i\":2}")));
      claims.add(claimOne(db, Work.of("batch-none", "no-topic", "{}")));
      Map<String, Object> p = producer();
      p.put("max.request.size", 20_000); // the client refuses the big record before queueing it
      List<Outcome> out;
      try (KafkaTransport kafka = KafkaTransport.builder(p).topic("k", topic).build()) {
        out = kafka.publishAll(claims);
      }

      assertThat(out).hasSize(4);
      assertThat(out.get(0)).isInstanceOf(Outcome.Done.class);
      assertThat(out.get(1))
          .isInstanceOfSatisfying(
              Outcome.Fail.class,
              f -> {
                assertThat(f.effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
                assertThat(f.reason()).contains("RecordTooLargeException");
              });
      assertThat(out.get(2)).isInstanceOf(Outcome.Done.class);
      assertThat(out.get(3)).isInstanceOf(Outcome.Fail.class);
      assertThat(readAll(topic, 2))
          .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
          .containsExactlyInAnyOrder("batch-1", "batch-2");
    }

    @Test
    void aRecordOverTheBrokersLimitFailsNotDeliveredWithoutHoldingItsBatch(TestDatabase db)
        throws Exception {
      // The topic takes at most 20 kB per batch; the producer's own limit (1 MB) lets the big
      // record through to the broker, which refuses it.
      String topic = newTopic(1, Map.of("max.message.bytes", "20000"));
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        works.add(Work.of(String.format("item-%02d", i), "k", "{\"i\":" + i + "}"));
      }
      works.add(Work.of("item-big", "k", "{\"blob\":\"" + "x".repeat(60_000) + "\"}"));
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        Outbox.builder().schema(db.schema()).build().enqueueAll(c, works);
        c.commit();
      }
      try (KafkaTransport kafka = KafkaTransport.builder(producer()).topic("k", topic).build();
          Relay relay =
              Relay.builder(db.dataSource())
                  .schema(db.schema())
                  .concurrency(64)
                  .pollInterval(Duration.ofMillis(100))
                  .handle(
                      "k",
                      KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(10), Duration.ofMillis(100)),
                      kafka)
                  .build()) {
        relay.start();
        await()
            .atMost(Duration.ofSeconds(90))
            .until(
                () ->
                    db.queryLong(
                            "SELECT count(*) FROM {schema}.work WHERE state IN ('done','failed')")
                        == works.size());
      }

      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
          .isEqualTo(40);
      assertThat(
              db.queryString(
                  "SELECT state || ' ' || outcome || ' ' || attempts FROM {schema}.work"
                      + " WHERE work_id = 'item-big'"))
          .isEqualTo("failed not_delivered 1");
      assertThat(db.queryString("SELECT last_error FROM {schema}.work WHERE work_id = 'item-big'"))
          .contains("RecordTooLargeException")
          .contains(topic);
      assertThat(readAll(topic, 40)).hasSize(40);
    }
  }

  @Nested
  class Configuration {
    @Test
    void theBatchSizeIsTheTransportsOwnAndOutOfRangeIsRefused() {
      try (KafkaTransport k =
          KafkaTransport.builder(producer()).topic("k", "t").maxBatchSize(500).build()) {
        assertThat(k.maxBatchSize()).isEqualTo(500);
      }
      assertThatThrownBy(
              () -> KafkaTransport.builder(producer()).topic("k", "t").maxBatchSize(0).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("maxBatchSize");
    }

    @Test
    void durabilityWeakerThanAcksAllIsRefused() {
      Map<String, Object> c = producer();
      c.put("acks", "1");
      assertThatThrownBy(() -> KafkaTransport.builder(c).topic("k", "t").build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("acks");
      c.put("acks", "all");
      c.put("enable.idempotence", "false");
      assertThatThrownBy(() -> KafkaTransport.builder(c).topic("k", "t").build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("enable.idempotence");
    }

    @Test
    void settingsTheClientRejectsAreRefusedByName() {
      Map<String, Object> c = producer();
      c.put("delivery.timeout.ms", 1_000); // less than linger.ms + request.timeout.ms
      assertThatThrownBy(() -> KafkaTransport.builder(c).topic("k", "t").build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("delivery.timeout.ms");
    }

    @Test
    void aTransportWithoutTopicsOrBootstrapIsRefused() {
      assertThatThrownBy(() -> KafkaTransport.builder(producer()).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("topics");
      assertThatThrownBy(() -> KafkaTransport.builder(Map.of()).topic("k", "t").build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("bootstrap.servers");
    }
  }
}
