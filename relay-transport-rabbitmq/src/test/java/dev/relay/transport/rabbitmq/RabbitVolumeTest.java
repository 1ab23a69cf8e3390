package dev.relay.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import dev.relay.KindPolicy;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.broker.CountingBatches;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Many items through two real workers, RabbitMQ and the consumer inbox: each published, consumed
 * and applied once, keyed items in their key's order. The workers run the transport as Relay's
 * batch handler, so each call publishes the buffered claims together. {@code
 * -Drelay.rabbitmq.items=N} changes the count (default 10,000, the volume).
 */
@RelayDatabaseTest
class RabbitVolumeTest {
  private static final String KIND = "order_received";
  private static final int KEYS = 50;

  @Test
  void everyItemIsPublishedConsumedAndAppliedOnceAndKeyedItemsKeepTheirOrder(TestDatabase db)
      throws Exception {
    int n = Integer.getInteger("relay.rabbitmq.items", 10_000);
    List<Work> work = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Work w = Work.of("order-" + i, KIND, "{\"order\":" + i + "}");
      work.add(i % 2 == 0 ? w.orderingKey("customer-" + (i / 2) % KEYS) : w);
    }
    Broker.enqueue(db.dataSource(), db.schema(), work);
    db.execute(
        "CREATE TABLE {schema}.applied (n bigserial, work_id text PRIMARY KEY,"
            + " ordering_key text, sequence bigint)");
    BrokerInbox inbox =
        BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build();
    RabbitInbox consumer =
        RabbitInbox.of(
            inbox,
            (tx, d) -> {
              try (PreparedStatement ps =
                  tx.prepareStatement(
                      "INSERT INTO "
                          + db.schema()
                          + ".applied (work_id, ordering_key, sequence) VALUES (?, ?, ?)")) {
                ps.setString(1, d.workId());
                ps.setString(2, d.orderingKey());
                ps.setObject(3, d.sequence());
                ps.executeUpdate();
              }
            });
    KindPolicy policy =
        KindPolicy.DEFAULT.withBackoff(Duration.ofMillis(10), Duration.ofMillis(100));
    List<CountingBatches> handled = new ArrayList<>();
    long started = System.nanoTime();
    try (Broker broker = new Broker();
        Connection consuming = broker.newConnection("relay-test-volume-consumer")) {
      String queue = broker.queue("volume");
      consumer.consume(consuming.createChannel(), queue, 100);
      List<Relay> workers = new ArrayList<>();
      List<RabbitTransport> transports = new ArrayList<>();
      try {
        for (int i = 0; i < 2; i++) {
          RabbitTransport t =
              RabbitTransport.builder(Broker.factory())
                  .route(RabbitRoute.toQueue(KIND, queue))
                  .build();
          transports.add(t);
          CountingBatches counted = new CountingBatches(t);
          handled.add(counted);
          Relay relay =
              Relay.builder(db.dataSource())
                  .schema(db.schema())
                  .workerId("rabbit-worker-" + i)
                  .pollInterval(Duration.ofMillis(100))
                  // Relay's default concurrency: the transport takes batches of buffered claims,
                  // so one handler slot has a whole batch of confirms in flight.
                  .handle(KIND, policy, counted)
                  .build();
          workers.add(relay);
          relay.start();
        }
        await()
            .atMost(Duration.ofMinutes(3))
            .pollInterval(Duration.ofMillis(250))
            .until(() -> db.queryLong("SELECT count(*) FROM {schema}.applied") == n);
      } finally {
        workers.forEach(Relay::close);
        transports.forEach(RabbitTransport::close);
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(queue) == 0);
    }
    System.out.printf(
        "RabbitVolumeTest: %d items published, consumed and applied in %d ms; batches %s%n",
        n, (System.nanoTime() - started) / 1_000_000, handled);

    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(n);
    assertThat(handled).allMatch(c -> c.claims() > 0); // both workers took part
    // The runtime handed the transport batches, not one claim per call.
    assertThat(handled).anyMatch(c -> c.largest() > 1);
    assertThat(handled.stream().mapToLong(CountingBatches::calls).sum()).isLessThan(n);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'billing'"))
        .isEqualTo(n);
    // Per key, the order of application is the order of the sequence.
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM (SELECT sequence, lag(sequence) OVER (PARTITION BY"
                    + " ordering_key ORDER BY n) AS before FROM {schema}.applied"
                    + " WHERE ordering_key IS NOT NULL) s WHERE sequence <= before"))
        .isZero();
    assertThat(db.queryLong("SELECT count(DISTINCT ordering_key) FROM {schema}.applied"))
        .isEqualTo(KEYS);
  }
}
