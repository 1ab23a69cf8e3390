package dev.relay.transport.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.KindPolicy;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.broker.CountingBatches;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Many items through two real workers, JetStream and a pull consumer behind the inbox: each stored
 * once, applied once, keyed items in their key's order. The workers run the transport as Relay's
 * batch handler, so each call publishes the buffered claims together. {@code -Drelay.nats.items=N}
 * changes the count (default 10,000, the volume).
 */
@RelayDatabaseTest
class NatsVolumeTest {
  private static final String KIND = "order_received";
  private static final int KEYS = 50;
  private static final Duration WINDOW = Duration.ofMinutes(2);

  @Test
  void everyItemIsStoredOnceAndAppliedOnceAndKeyedItemsKeepTheirOrder(TestDatabase db)
      throws Exception {
    int n = Integer.getInteger("relay.nats.items", 10_000);
    List<Work> work = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Work w = Work.of("order-" + i, KIND, "{\"order\":" + i + "}");
      work.add(i % 2 == 0 ? w.orderingKey("customer-" + (i / 2) % KEYS) : w);
    }
    Streams.enqueue(db.dataSource(), db.schema(), work);
    db.execute(
        "CREATE TABLE {schema}.applied (n bigserial, work_id text PRIMARY KEY,"
            + " ordering_key text, sequence bigint)");
    BrokerInbox inbox =
        BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build();
    List<CountingBatches> handled = new ArrayList<>();
    long started = System.nanoTime();
    try (Streams streams = new Streams()) {
      Streams.Stream s = streams.create(WINDOW);
      NatsRoute route = new NatsRoute(KIND, s.name(), s.subject(), WINDOW);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> consumerError = new AtomicReference<>();
      JetStreamSubscription sub =
          streams
              .connection()
              .jetStream()
              .subscribe(
                  s.subject(),
                  PullSubscribeOptions.builder().stream(s.name()).durable("billing").build());
      Thread consumer =
          new Thread(
              () -> {
                try {
                  while (!stop.get()) {
                    for (Message m : sub.fetch(200, Duration.ofMillis(500))) {
                      inbox.apply(
                          name -> m.getHeaders().getFirst(name),
                          new String(m.getData(), StandardCharsets.UTF_8),
                          (tx, d) -> {
                            try (PreparedStatement ps =
                                tx.prepareStatement(
                                    "INSERT INTO "
                                        + db.schema()
                                        + ".applied (work_id, ordering_key, sequence)"
                                        + " VALUES (?, ?, ?)")) {
                              ps.setString(1, d.workId());
                              ps.setString(2, d.orderingKey());
                              ps.setObject(3, d.sequence());
                              ps.executeUpdate();
                            }
                          });
                      m.ack();
                    }
                  }
                } catch (Throwable e) {
                  consumerError.set(e);
                }
              },
              "nats-volume-consumer");
      consumer.start();
      List<Relay> workers = new ArrayList<>();
      List<NatsTransport> transports = new ArrayList<>();
      try {
        for (int i = 0; i < 2; i++) {
          NatsTransport t = NatsTransport.builder(Streams.options()).route(route).build();
          t.start();
          transports.add(t);
          CountingBatches counted = new CountingBatches(t);
          handled.add(counted);
          Relay relay =
              Relay.builder(db.dataSource())
                  .schema(db.schema())
                  .workerId("nats-worker-" + i)
                  .pollInterval(Duration.ofMillis(100))
                  // Relay's default concurrency: the transport takes batches of buffered claims.
                  .handle(
                      KIND,
                      route.policy(
                          KindPolicy.DEFAULT.withBackoff(
                              Duration.ofMillis(10), Duration.ofMillis(100))),
                      counted)
                  .build();
          workers.add(relay);
          relay.start();
        }
        await()
            .atMost(Duration.ofMinutes(3))
            .pollInterval(Duration.ofMillis(250))
            .until(
                () ->
                    consumerError.get() != null
                        || db.queryLong("SELECT count(*) FROM {schema}.applied") == n);
      } finally {
        workers.forEach(Relay::close);
        transports.forEach(NatsTransport::close);
        stop.set(true);
        consumer.join(10_000);
      }
      assertThat(consumerError.get()).isNull();
      assertThat(streams.messages(s)).isEqualTo(n);
    }
    System.out.printf(
        "NatsVolumeTest: %d items published, consumed and applied in %d ms; batches %s%n",
        n, (System.nanoTime() - started) / 1_000_000, handled);

    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(n);
    assertThat(handled).allMatch(c -> c.claims() > 0); // both workers took part
    // The runtime handed the transport batches, not one claim per call.
    assertThat(handled).anyMatch(c -> c.largest() > 1);
    assertThat(handled.stream().mapToLong(CountingBatches::calls).sum()).isLessThan(n);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'billing'"))
        .isEqualTo(n);
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
