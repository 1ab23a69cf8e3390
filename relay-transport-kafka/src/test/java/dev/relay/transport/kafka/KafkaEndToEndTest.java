package dev.relay.transport.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerEffect;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.broker.CountingBatches;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Outbox to consumer through a real broker, with two Relay workers publishing and two consumers in
 * one group applying behind the inbox: every item applied once, keyed items in order, also when the
 * broker is killed in the middle and started again on its data. The workers run the transport as
 * Relay's batch handler: each call sends the buffered claims together.
 */
@RelayDatabaseTest
class KafkaEndToEndTest {
  /**
   * Items per run: 10,000 by default (the volume); {@code -Drelay.kafka.items=N} changes
   * it.
   */
  static final int ITEMS = Integer.getInteger("relay.kafka.items", 10_000);

  static final int KEYS = 100;

  static KafkaBroker broker;
  private final List<AutoCloseable> open = new ArrayList<>();
  private final List<CountingBatches> handled = new ArrayList<>();
  private String topic;
  private String schema;

  @BeforeAll
  static void broker() throws Exception {
    broker = SharedBroker.get();
  }

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    topic = "e2e-" + UUID.randomUUID();
    broker.createTopic(topic, 4, Map.of());
    schema = db.schema();
    db.execute(
        "CREATE TABLE {schema}.applied"
            + " (seq bigserial, work_id text, ordering_key text, sequence bigint)");
  }

  @AfterEach
  void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void everyItemIsAppliedOnceAndKeyedItemsInOrderWithTwoWorkers(TestDatabase db) throws Exception {
    enqueue(db, ITEMS);
    consumers(db, 2);
    long started = System.nanoTime();
    workers(db, 2, Duration.ofSeconds(30)); // generous: a loaded machine must not cause retries

    awaitAllDoneAndApplied(db, ITEMS, Duration.ofMinutes(3));
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.printf(
        "%d items published and applied in %.1f s (%.0f items/s, awaited at 500 ms steps);"
            + " batches %s%n",
        ITEMS, seconds, ITEMS / seconds, handled);

    assertAppliedOnceInKeyOrder(db, ITEMS);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.work WHERE state = 'done' AND attempts = 1"
                    + " AND result->>'milestone' = 'broker_accepted'"))
        .isEqualTo(ITEMS);
    assertThat(handled).allMatch(c -> c.claims() > 0); // both workers took part
    // The runtime handed the transport batches, not one claim per call.
    assertThat(handled).anyMatch(c -> c.largest() > 1);
    assertThat(handled.stream().mapToLong(CountingBatches::calls).sum()).isLessThan(ITEMS);
  }

  @Test
  void aBrokerKilledInTheMiddleOfABatchLosesNothingAndEachItemAppliesOnce(TestDatabase db)
      throws Exception {
    int items = Math.max(1000, ITEMS / 2);
    enqueue(db, items);
    consumers(db, 2);
    workers(db, 2, Duration.ofSeconds(6)); // short: the attempts cut off by the kill end soon
    await()
        .atMost(Duration.ofMinutes(2))
        .until(
            () ->
                db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'")
                    >= items / 5);

    broker.kill();
    long doneWhileKilled = db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'");
    broker.restart();

    awaitAllDoneAndApplied(db, items, Duration.ofMinutes(3));
    assertAppliedOnceInKeyOrder(db, items);
    assertThat(doneWhileKilled).isLessThan(items);
    // The attempts that were in flight when the broker died ended unknown or not delivered and
    // were retried; none was given up.
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state <> 'done'")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.attempt WHERE ending = 'retry'"))
        .as("attempts cut off by the broker's death and retried")
        .isPositive();
    System.out.println(
        "broker killed after "
            + doneWhileKilled
            + " of "
            + items
            + " done; retried attempts by outcome: "
            + db.queryString(
                "SELECT string_agg(outcome || '=' || n, ', ') FROM (SELECT outcome, count(*) AS n"
                    + " FROM {schema}.attempt WHERE ending = 'retry' GROUP BY outcome) x"));
  }

  private void enqueue(TestDatabase db, int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      List<Work> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Work w = Work.of(String.format("item-%05d", i), "event", "{\"i\":" + i + "}");
        // Every other item is keyed: KEYS keys, each a strict history.
        batch.add(i % 2 == 0 ? w.orderingKey("key-" + (i / 2) % KEYS) : w);
        if (batch.size() == 1000) {
          outbox.enqueueAll(c, batch);
          batch.clear();
        }
      }
      if (!batch.isEmpty()) {
        outbox.enqueueAll(c, batch);
      }
      c.commit();
    }
  }

  /** Starts {@code n} Relay workers whose producers give up on a record after {@code delivery}. */
  private void workers(TestDatabase db, int n, Duration delivery) {
    for (int i = 0; i < n; i++) {
      Map<String, Object> p = new HashMap<>(broker.client());
      p.put("delivery.timeout.ms", (int) delivery.toMillis());
      p.put("request.timeout.ms", (int) delivery.dividedBy(3).toMillis());
      p.put("max.block.ms", (int) delivery.dividedBy(3).toMillis());
      KafkaTransport kafka = KafkaTransport.builder(p).topic("event", topic).build();
      open.add(kafka);
      CountingBatches counted = new CountingBatches(kafka);
      handled.add(counted);
      Relay relay =
          Relay.builder(db.newDataSource("worker-" + i, 6))
              .schema(db.schema())
              .workerId("worker-" + i)
              // Relay's default concurrency: the transport takes batches of buffered claims, each
              // sent together and completed after the acks.
              .pollInterval(Duration.ofMillis(100))
              .handle(
                  "event",
                  KindPolicy.DEFAULT
                      .withBackoff(Duration.ofMillis(50), Duration.ofSeconds(1))
                      .withMaxRunTime(delivery.plusSeconds(2)),
                  counted)
              .build();
      open.add(relay);
      relay.start();
    }
  }

  private void consumers(TestDatabase db, int n) {
    BrokerEffect effect =
        (tx, d) -> {
          try (PreparedStatement ps =
              tx.prepareStatement(
                  "INSERT INTO "
                      + schema
                      + ".applied (work_id, ordering_key, sequence) VALUES (?, ?, ?)")) {
            ps.setString(1, d.workId());
            ps.setString(2, d.orderingKey());
            ps.setObject(3, d.sequence());
            ps.executeUpdate();
          }
        };
    String group = "g-" + UUID.randomUUID();
    for (int i = 0; i < n; i++) {
      Map<String, Object> c = new HashMap<>(broker.client());
      c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
      var ds = db.newDataSource("consumer-" + i, 2);
      KafkaInboxConsumer loop =
          KafkaInboxConsumer.builder(
                  c, ds, BrokerInbox.builder(ds).consumer("ledger").schema(db.schema()).build())
              .topics(List.of(topic))
              .effect(effect)
              .retryBackoff(Duration.ofMillis(200))
              .pollTimeout(Duration.ofMillis(200))
              .build();
      open.add(loop);
      loop.start();
    }
  }

  private static void awaitAllDoneAndApplied(TestDatabase db, int n, Duration within) {
    await()
        .atMost(within)
        .pollInterval(Duration.ofMillis(500))
        .until(
            () ->
                db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'") == n
                    && db.queryLong("SELECT count(DISTINCT work_id) FROM {schema}.applied") == n);
  }

  private static void assertAppliedOnceInKeyOrder(TestDatabase db, int n) throws Exception {
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.applied")).isEqualTo(n);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'ledger'"))
        .isEqualTo(n);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM (SELECT sequence,"
                    + " lag(sequence) OVER (PARTITION BY ordering_key ORDER BY seq) AS before"
                    + " FROM {schema}.applied WHERE ordering_key IS NOT NULL) x"
                    + " WHERE before >= sequence"))
        .as("keyed items applied out of their sequence")
        .isZero();
    assertThat(
            db.queryLong(
                "SELECT count(DISTINCT ordering_key) FROM {schema}.applied"
                    + " WHERE ordering_key IS NOT NULL"))
        .isEqualTo(Math.min(KEYS, (n + 1) / 2));
  }
}
