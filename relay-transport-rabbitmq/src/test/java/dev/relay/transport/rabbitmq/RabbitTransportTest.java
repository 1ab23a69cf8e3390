package dev.relay.transport.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.NoOpMetricsCollector;
import dev.relay.Milestone;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import dev.relay.transport.broker.BrokerAccepted;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.broker.PublishRounds;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The transport against the machine's RabbitMQ, driven claim by claim with the manual worker. */
@RelayDatabaseTest
class RabbitTransportTest {
  private static final String KIND = "order_received";

  private Broker broker;

  @BeforeEach
  void connect() throws Exception {
    broker = new Broker();
  }

  @AfterEach
  void disconnect() throws Exception {
    broker.close();
  }

  private static ManualWorker worker(TestDatabase db, RabbitTransport t) {
    return ManualWorker.builder(db.dataSource()).schema(db.schema()).handle(KIND, t).build();
  }

  /** Claims up to {@code limit} items, publishes them as one batch, records each outcome. */
  private static Map<String, Outcome> round(ManualWorker w, RabbitTransport t, int limit) {
    return PublishRounds.round(w, KIND, limit, t::publishAll);
  }

  private static List<Work> orders(int n) {
    List<Work> work = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      work.add(Work.of("order-" + i, KIND, "{\"order\":" + i + "}"));
    }
    return work;
  }

  @Test
  void confirmedMessageIsDoneAndCarriesMessageIdPersistenceAndRelayHeaders(TestDatabase db)
      throws Exception {
    String queue = broker.queue("basic");
    Broker.enqueue(
        db.dataSource(),
        db.schema(),
        List.of(
            Work.of("order-1", KIND, "{\"order\":1}"),
            Work.of("order-2", KIND, "{\"order\":2}").orderingKey("customer-7")));
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory())
            .route(RabbitRoute.toQueue(KIND, queue))
            .fencing(claim -> new BrokerHeaders.Fencing("customer-7", 40 + claim.generation()))
            .build()) {
      Map<String, Outcome> outcomes = round(worker(db, t), t, 10);

      assertThat(outcomes.values())
          .allSatisfy(
              o -> {
                assertThat(o).isInstanceOf(Outcome.Done.class);
                assertThat(((Outcome.Done) o).milestone()).isEqualTo(Milestone.ACCEPTED);
                assertThat(((Outcome.Done) o).resultJson())
                    .contains(BrokerAccepted.MILESTONE, "rabbitmq", queue);
              });
    }
    assertThat(db.queryString("SELECT string_agg(state || ' ' || outcome, ',') FROM {schema}.work"))
        .isEqualTo("done delivered,done delivered");
    Map<String, GetResponse> got = new LinkedHashMap<>();
    for (int i = 0; i < 2; i++) {
      GetResponse r = broker.channel().basicGet(queue, true);
      got.put(r.getProps().getMessageId(), r);
    }
    GetResponse keyed = got.get("order-2");
    assertThat(keyed.getProps().getDeliveryMode()).isEqualTo(2);
    assertThat(keyed.getProps().getContentType()).isEqualTo("application/json");
    assertThat(new String(keyed.getBody(), StandardCharsets.UTF_8)).isEqualTo("{\"order\": 2}");
    Map<String, String> headers = new LinkedHashMap<>();
    keyed.getProps().getHeaders().forEach((k, v) -> headers.put(k, v.toString()));
    assertThat(headers)
        .containsEntry(BrokerHeaders.WORK_ID, "order-2")
        .containsEntry(BrokerHeaders.KIND, KIND)
        .containsEntry(BrokerHeaders.GENERATION, "1")
        .containsEntry(BrokerHeaders.ORDERING_KEY, "customer-7")
        .containsEntry(BrokerHeaders.SEQUENCE, "1")
        .containsEntry(BrokerHeaders.FENCING_RESOURCE, "customer-7")
        .containsEntry(BrokerHeaders.FENCING_TOKEN, "41");
    assertThat(got.get("order-1").getProps().getHeaders())
        .doesNotContainKey(BrokerHeaders.ORDERING_KEY);
  }

  @Test
  void anAttemptWithoutRunTimeLeftIsNotSent(TestDatabase db) throws Exception {
    String queue = broker.queue("late");
    Broker.enqueue(db.dataSource(), db.schema(), orders(1));
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory()).route(RabbitRoute.toQueue(KIND, queue)).build()) {
      ManualWorker w =
          ManualWorker.builder(db.dataSource())
              .schema(db.schema())
              .lease(Duration.ofMillis(20)) // the manual worker's run time is its lease
              .handle(KIND, t)
              .build();
      Outcome o = w.call(w.claimNext(KIND).orElseThrow()).outcome();

      assertThat(o).isInstanceOf(Outcome.Retry.class);
      assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
      assertThat(((Outcome.Retry) o).reason()).contains("not sent");
    }
    assertThat(broker.messageCount(queue)).isZero();
  }

  @Test
  void anUnreachableBrokerLeavesEveryItemOfTheBatchNotDelivered(TestDatabase db) throws Exception {
    Broker.enqueue(db.dataSource(), db.schema(), orders(5));
    ConnectionFactory nowhere = Broker.factory();
    try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
      nowhere.setPort(closed.getLocalPort()); // bound, then closed: nothing listens there
    }
    try (RabbitTransport t =
        RabbitTransport.builder(nowhere).route(RabbitRoute.toQueue(KIND, "orders")).build()) {
      Map<String, Outcome> outcomes = round(worker(db, t), t, 10);

      assertThat(outcomes.values())
          .hasSize(5)
          .allSatisfy(
              o -> {
                assertThat(o).isInstanceOf(Outcome.Retry.class);
                assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
                assertThat(((Outcome.Retry) o).reason()).contains("cannot connect");
              });
    }
  }

  @Test
  void unroutableMessageIsReturnedAndRetriedAsNotDelivered(TestDatabase db) throws Exception {
    Broker.enqueue(db.dataSource(), db.schema(), orders(1));
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory())
            .route(RabbitRoute.toQueue(KIND, Broker.missingQueue()))
            .build()) {
      Outcome o = round(worker(db, t), t, 10).get("order-0");

      assertThat(o).isInstanceOf(Outcome.Retry.class);
      assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
      assertThat(((Outcome.Retry) o).reason()).contains("unroutable", "312", "NO_ROUTE");
    }
    assertThat(db.queryString("SELECT state || ' ' || outcome FROM {schema}.work"))
        .isEqualTo("ready not_delivered");
  }

  @Test
  void aMissingExchangeIsNotDeliveredAndNamedAsAConfigurationProblem(TestDatabase db)
      throws Exception {
    String exchange = "relay-test-no-such-exchange-" + java.util.UUID.randomUUID();
    Broker.enqueue(db.dataSource(), db.schema(), orders(3));
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory())
            .route(new RabbitRoute(KIND, exchange, "order.received"))
            .build()) {
      ManualWorker w = worker(db, t);
      // The passive declare finds the exchange missing before anything is published; the second
      // round checks again (a missing exchange is not remembered) and says the same.
      for (int attempt = 1; attempt <= 2; attempt++) {
        Map<String, Outcome> outcomes = round(w, t, 10);

        assertThat(outcomes).as("attempt %s", attempt).hasSize(3);
        assertThat(outcomes.values())
            .allSatisfy(
                o -> {
                  assertThat(o).isInstanceOf(Outcome.Retry.class);
                  assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
                  assertThat(((Outcome.Retry) o).reason())
                      .contains("exchange '" + exchange + "' does not exist", "404 NOT_FOUND")
                      .doesNotContain("null");
                });
        // Nothing was published: the publishing channel took no message and is still open (a
        // publish to the missing exchange would have closed it).
        PublishSession session = t.currentSession();
        assertThat(session).as("attempt %s", attempt).isNotNull();
        assertThat(session.published()).as("attempt %s", attempt).isZero();
        assertThat(session.isOpen()).as("attempt %s", attempt).isTrue();
      }
    }
    assertThat(
            db.queryString(
                "SELECT string_agg(DISTINCT state || ' ' || outcome, ',') FROM {schema}.work"))
        .isEqualTo("ready not_delivered");
    assertThat(PublishSession.describe(null)).doesNotContain("null").contains("closed");
  }

  @Test
  void anExchangeDeletedAfterItsCheckLeavesTheInFlightMessageUnknown(TestDatabase db)
      throws Exception {
    String queue = broker.queue("deleted-exchange");
    String exchange = "relay-test-deleted-exchange-" + java.util.UUID.randomUUID();
    broker.channel().exchangeDeclare(exchange, "direct", false);
    try {
      broker.channel().queueBind(queue, exchange, "order.received");
      Broker.enqueue(db.dataSource(), db.schema(), orders(2));
      try (RabbitTransport t =
          RabbitTransport.builder(Broker.factory())
              .route(new RabbitRoute(KIND, exchange, "order.received"))
              .build()) {
        ManualWorker w = worker(db, t);
        assertThat(round(w, t, 1).values()).singleElement().isInstanceOf(Outcome.Done.class);

        // Checked once on this channel, so the next publish goes out and meets the 404 close:
        // the broker cannot say what it routed before, so the outcome claims nothing.
        broker.channel().exchangeDelete(exchange);
        Outcome o = round(w, t, 1).values().iterator().next();

        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Outcome.Effect.UNKNOWN);
        assertThat(((Outcome.Retry) o).reason())
            .contains("exchange '" + exchange + "'", "404 NOT_FOUND", "deleted")
            .doesNotContain("null");

        // The new channel checks again and finds it missing: not delivered, nothing published.
        Broker.enqueue(db.dataSource(), db.schema(), List.of(Work.of("order-9", KIND, "{}")));
        Map<String, Outcome> again = round(w, t, 10);
        assertThat(again.get("order-9")).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) again.get("order-9")).effect())
            .isEqualTo(Outcome.Effect.NOT_DELIVERED);
        assertThat(t.currentSession().published()).isZero();
      }
    } finally {
      broker.channel().exchangeDelete(exchange);
    }
    assertThat(broker.messageCount(queue)).isEqualTo(1);
  }

  @Test
  void payloadOverTheLimitFailsNotDeliveredWithoutHoldingTheRestOfItsBatch(TestDatabase db)
      throws Exception {
    String queue = broker.queue("size");
    List<Work> work = orders(9);
    work.add(4, Work.of("order-big", KIND, "{\"blob\":\"" + "x".repeat(100_000) + "\"}"));
    Broker.enqueue(db.dataSource(), db.schema(), work);
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory())
            .route(RabbitRoute.toQueue(KIND, queue))
            .maxMessageBytes(64 * 1024)
            .build()) {
      Map<String, Outcome> outcomes = round(worker(db, t), t, 20);

      assertThat(outcomes).hasSize(10);
      Outcome big = outcomes.remove("order-big");
      assertThat(big).isInstanceOf(Outcome.Fail.class);
      assertThat(((Outcome.Fail) big).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
      assertThat(((Outcome.Fail) big).reason()).contains("100012 bytes", "65536 bytes");
      assertThat(outcomes.values()).allMatch(o -> o instanceof Outcome.Done);
    }
    assertThat(
            db.queryString(
                "SELECT state || ' ' || outcome || ' ' || last_error FROM {schema}.work"
                    + " WHERE work_id = 'order-big'"))
        .startsWith("failed not_delivered payload is 100012 bytes");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(9);
    await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(queue) == 9);
  }

  @Test
  void brokersOwnSizeLimitFailsThatItemAndTheTransportAdoptsTheLimit(TestDatabase db)
      throws Exception {
    String queue = broker.queue("broker-size");
    List<Work> work = orders(6);
    work.add(3, Work.of("order-big", KIND, "{\"blob\":\"" + "x".repeat(100_000) + "\"}"));
    Broker.enqueue(db.dataSource(), db.schema(), work);
    String before = Broker.rabbitmqctl("eval", "application:get_env(rabbit, max_message_size).");
    Matcher m = Pattern.compile("\\{ok,(\\d+)}").matcher(before);
    assertThat(m.find()).as("broker's max_message_size: %s", before).isTrue();
    Broker.rabbitmqctl("eval", "application:set_env(rabbit, max_message_size, 65536).");
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory()).route(RabbitRoute.toQueue(KIND, queue)).build()) {
      ManualWorker w = worker(db, t);
      Outcome big = round(w, t, 20).get("order-big");

      assertThat(big).isInstanceOf(Outcome.Fail.class);
      assertThat(((Outcome.Fail) big).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
      assertThat(((Outcome.Fail) big).reason())
          .contains("100012 bytes", "65536 bytes", "larger than configured max size");
      assertThat(t.maxMessageBytes()).isEqualTo(65536);
      // Items after it on the closed channel were lost with it: retried on the next round.
      for (int i = 0; i < 5 && !round(w, t, 20).isEmpty(); i++) {}
    } finally {
      Broker.rabbitmqctl(
          "eval", "application:set_env(rabbit, max_message_size, " + m.group(1) + ").");
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(6);
    Set<String> ids = new HashSet<>();
    for (GetResponse r; (r = broker.channel().basicGet(queue, true)) != null; ) {
      ids.add(r.getProps().getMessageId());
    }
    assertThat(ids).hasSize(6).doesNotContain("order-big");
  }

  @Test
  void connectionClosedMidBatchLosesNothingAndTheConsumerAppliesEachOnce(TestDatabase db)
      throws Exception {
    String queue = broker.queue("close");
    int n = 200;
    Broker.enqueue(db.dataSource(), db.schema(), orders(n));
    db.execute("CREATE TABLE {schema}.applied (work_id text PRIMARY KEY)");
    ConnectionFactory cutting = Broker.factory();
    AtomicInteger published = new AtomicInteger();
    AtomicBoolean cut = new AtomicBoolean();
    AtomicInteger connections = new AtomicInteger();
    cutting.setMetricsCollector(
        new NoOpMetricsCollector() {
          @Override
          public void newConnection(Connection connection) {
            connections.incrementAndGet();
          }

          @Override
          public void basicPublish(Channel channel) {
            // The 100th message has been written: close the connection under the rest.
            if (published.incrementAndGet() == n / 2 && cut.compareAndSet(false, true)) {
              Connection publishing = channel.getConnection();
              publishing.abort();
              // abort() returns before the client marks the connection closed.
              await().atMost(Duration.ofSeconds(30)).until(() -> !publishing.isOpen());
            }
          }
        });
    Map<String, AtomicInteger> applied = new ConcurrentHashMap<>();
    RabbitInbox inbox =
        RabbitInbox.of(
            BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build(),
            (tx, message) -> {
              try (var ps =
                  tx.prepareStatement(
                      "INSERT INTO " + db.schema() + ".applied (work_id) VALUES (?)")) {
                ps.setString(1, message.workId());
                ps.executeUpdate();
              }
              applied.computeIfAbsent(message.workId(), k -> new AtomicInteger()).incrementAndGet();
            });
    List<Outcome> firstRound;
    try (Connection consumer = broker.newConnection("relay-test-consumer");
        RabbitTransport t =
            RabbitTransport.builder(cutting).route(RabbitRoute.toQueue(KIND, queue)).build()) {
      inbox.consume(consumer.createChannel(), queue, 50);
      ManualWorker w = worker(db, t);
      firstRound = new ArrayList<>(round(w, t, n).values());
      for (int i = 0; i < 10 && !round(w, t, n).isEmpty(); i++) {}

      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryLong("SELECT count(*) FROM {schema}.applied") == n);
      await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(queue) == 0);
    }
    assertThat(cut).isTrue();
    assertThat(firstRound).hasSize(n);
    // The first half was written to the closed connection: each item is done (confirmed before
    // the close) or retried with its effect unknown. The second half went out on a new connection.
    assertThat(firstRound.subList(0, n / 2))
        .allMatch(
            o ->
                o instanceof Outcome.Done
                    || (o instanceof Outcome.Retry r && r.effect() == Outcome.Effect.UNKNOWN));
    assertThat(firstRound.subList(n / 2, n)).allMatch(o -> o instanceof Outcome.Done);
    assertThat(connections).hasValue(2);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'"))
        .isEqualTo(n);
    assertThat(applied).hasSize(n);
    assertThat(applied.values()).allMatch(c -> c.get() == 1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox WHERE consumer = 'billing'"))
        .isEqualTo(n);
  }

  @Test
  void theBatchSizeIsTheTransportsOwnAndOutOfRangeIsRefused() {
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory())
            .route(RabbitRoute.toQueue(KIND, "q"))
            .maxBatchSize(250)
            .build()) {
      assertThat(t.maxBatchSize()).isEqualTo(250);
    }
    try (RabbitTransport t =
        RabbitTransport.builder(Broker.factory()).route(RabbitRoute.toQueue(KIND, "q")).build()) {
      assertThat(t.maxBatchSize()).isEqualTo(dev.relay.BatchHandler.DEFAULT_MAX_BATCH_SIZE);
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () ->
                RabbitTransport.builder(Broker.factory())
                    .route(RabbitRoute.toQueue(KIND, "q"))
                    .maxBatchSize(0)
                    .build())
        .isInstanceOf(dev.relay.InvalidConfigurationException.class)
        .hasMessageContaining("maxBatchSize")
        .hasMessageContaining("between 1 and 1000");
  }
}
