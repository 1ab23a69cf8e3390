package dev.relay.transport.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.HeldClaim;
import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import dev.relay.Milestone;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import dev.relay.transport.broker.BrokerAccepted;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.broker.PublishRounds;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The transport against the machine's NATS JetStream, driven with the manual worker. */
@RelayDatabaseTest
class NatsTransportTest {
  private static final String KIND = "order_received";
  private static final Duration WINDOW = Duration.ofMinutes(2);

  private Streams streams;

  @BeforeEach
  void connect() throws Exception {
    streams = new Streams();
  }

  @AfterEach
  void disconnect() throws Exception {
    streams.close();
  }

  private static NatsTransport started(Streams.Stream s, Duration horizon) {
    NatsTransport t =
        NatsTransport.builder(Streams.options())
            .route(new NatsRoute(KIND, s.name(), s.subject(), horizon))
            .build();
    t.start();
    return t;
  }

  private static ManualWorker worker(TestDatabase db, NatsTransport t) {
    return ManualWorker.builder(db.dataSource()).schema(db.schema()).handle(KIND, t).build();
  }

  /** Claims up to {@code limit} items, publishes them as one batch, records each outcome. */
  private static Map<String, Outcome> round(ManualWorker w, NatsTransport t, int limit) {
    return PublishRounds.round(w, KIND, limit, t::publishAll);
  }

  @Test
  void publishedOnceWithMsgIdAndHeadersAndTheConsumerAppliesEachOnce(TestDatabase db)
      throws Exception {
    Streams.Stream s = streams.create(WINDOW);
    Streams.enqueue(
        db.dataSource(),
        db.schema(),
        List.of(
            Work.of("order-1", KIND, "{\"order\":1}"),
            Work.of("order-2", KIND, "{\"order\":2}").orderingKey("customer-7"),
            Work.of("order-3", KIND, "{\"order\":3}").orderingKey("customer-8")));
    try (NatsTransport t = started(s, WINDOW)) {
      Map<String, Outcome> outcomes = round(worker(db, t), t, 10);

      assertThat(outcomes.values())
          .allSatisfy(
              o -> {
                assertThat(o).isInstanceOf(Outcome.Done.class);
                Outcome.Done d = (Outcome.Done) o;
                assertThat(d.milestone()).isEqualTo(Milestone.ACCEPTED);
                assertThat(d.resultJson())
                    .contains(BrokerAccepted.MILESTONE, "\"nats\"", "\"duplicate\":false");
                assertThat(d.receiverRef()).startsWith(s.name() + ":");
              });
    }
    assertThat(streams.messages(s)).isEqualTo(3);

    db.execute("CREATE TABLE {schema}.applied (work_id text PRIMARY KEY, body text)");
    BrokerInbox inbox =
        BrokerInbox.builder(db.dataSource()).schema(db.schema()).consumer("billing").build();
    JetStreamSubscription sub =
        streams
            .connection()
            .jetStream()
            .subscribe(
                s.subject(),
                PullSubscribeOptions.builder().stream(s.name()).durable("billing").build());
    List<Message> got = new ArrayList<>();
    for (int i = 0; i < 10 && got.size() < 3; i++) {
      got.addAll(sub.fetch(3 - got.size(), Duration.ofSeconds(2)));
    }
    assertThat(got).hasSize(3);
    for (Message m : got) {
      assertThat(m.getHeaders().getFirst("Nats-Msg-Id"))
          .isEqualTo(m.getHeaders().getFirst(BrokerHeaders.WORK_ID));
      for (int repeat = 0; repeat < 2; repeat++) { // a redelivery applies once
        BrokerInbox.Result r =
            inbox.apply(
                name -> m.getHeaders().getFirst(name),
                new String(m.getData(), StandardCharsets.UTF_8),
                (tx, d) -> {
                  try (PreparedStatement ps =
                      tx.prepareStatement(
                          "INSERT INTO " + db.schema() + ".applied VALUES (?, ?)")) {
                    ps.setString(1, d.workId());
                    ps.setString(2, d.payload());
                    ps.executeUpdate();
                  }
                });
        assertThat(r.status())
            .isEqualTo(repeat == 0 ? BrokerInbox.Status.APPLIED : BrokerInbox.Status.DUPLICATE);
      }
      m.ack();
    }
    assertThat(
            db.queryString(
                "SELECT string_agg(work_id, ',' ORDER BY work_id) FROM {schema}.applied"))
        .isEqualTo("order-1,order-2,order-3");
    Message keyed =
        got.stream()
            .filter(m -> m.getHeaders().getFirst(BrokerHeaders.WORK_ID).equals("order-2"))
            .findFirst()
            .orElseThrow();
    assertThat(keyed.getHeaders().getFirst(BrokerHeaders.ORDERING_KEY)).isEqualTo("customer-7");
    assertThat(keyed.getHeaders().getFirst(BrokerHeaders.SEQUENCE)).isEqualTo("1");
    assertThat(keyed.getHeaders().getFirst(BrokerHeaders.GENERATION)).isEqualTo("1");
  }

  @Test
  void aRepeatedPublishOfTheSameWorkIdIsDroppedByTheStream(TestDatabase db) throws Exception {
    Streams.Stream s = streams.create(WINDOW);
    Streams.enqueue(db.dataSource(), db.schema(), List.of(Work.of("order-1", KIND, "{}")));
    try (NatsTransport t = started(s, WINDOW)) {
      ManualWorker w = worker(db, t);
      // The first attempt publishes, then its worker stalls before recording the outcome.
      HeldClaim first = w.claimNext(KIND).orElseThrow();
      Outcome published = w.call(first).outcome();
      assertThat(published).isInstanceOf(Outcome.Done.class);
      w.expireLease(first);

      ManualWorker.Attempt second = w.runNext(KIND).orElseThrow();

      assertThat(second.claim().generation()).isEqualTo(2);
      assertThat(second.write().applied()).isTrue();
      Outcome.Done repeat = (Outcome.Done) second.outcome();
      assertThat(repeat.resultJson()).contains("\"duplicate\":true");
      assertThat(repeat.receiverRef()).isEqualTo(((Outcome.Done) published).receiverRef());
    }
    assertThat(streams.messages(s)).isEqualTo(1);
  }

  @Nested
  class HorizonCheck {
    @Test
    void aHorizonLongerThanTheStreamsDuplicateWindowIsRefusedAtStartNamingBoth() throws Exception {
      Streams.Stream s = streams.create(Duration.ofMinutes(1));
      NatsTransport t =
          NatsTransport.builder(Streams.options())
              .route(new NatsRoute(KIND, s.name(), s.subject(), Duration.ofMinutes(2)))
              .build();

      assertThatThrownBy(t::start)
          .isInstanceOfSatisfying(
              DedupWindowException.class,
              e -> {
                assertThat(e.dedupHorizon()).isEqualTo(Duration.ofMinutes(2));
                assertThat(e.duplicateWindow()).isEqualTo(Duration.ofMinutes(1));
              })
          .hasMessageContaining("PT2M")
          .hasMessageContaining("PT1M")
          .hasMessageContaining(s.name());
    }

    @Test
    void aHorizonShorterThanTheLeasePlusThePollIsRefusedAtStartNamingBoth() throws Exception {
      // issue 23: window 2 s, horizon 2 s, lease 5 s; a takeover always came after the window
      Streams.Stream s = streams.create(Duration.ofSeconds(2));
      NatsRoute route = new NatsRoute(KIND, s.name(), s.subject(), Duration.ofSeconds(2));
      NatsTransport t =
          NatsTransport.builder(Streams.options())
              .route(route)
              .workerTimings(Duration.ofSeconds(5), Duration.ofSeconds(1))
              .build();

      assertThatThrownBy(t::start)
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class,
              e -> assertThat(e.setting()).isEqualTo("dedupHorizon"))
          .hasMessageContaining("horizon (PT2S")
          .hasMessageContaining("lease (PT5S)")
          .hasMessageContaining("pollInterval (PT1S)")
          .hasMessageContaining(s.name());
    }

    @Test
    void theRelayRefusesTheRoutesPolicyWhenItsHorizonIsShorterThanTheLeasePlusThePoll(
        TestDatabase db) {
      NatsRoute route = new NatsRoute(KIND, "ORDERS", "orders.received", Duration.ofSeconds(2));
      assertThatThrownBy(
              () ->
                  Relay.builder(db.dataSource())
                      .schema(db.schema())
                      .lease(Duration.ofSeconds(5))
                      .pollInterval(Duration.ofSeconds(1))
                      .handle(KIND, route.policy(KindPolicy.DEFAULT), (c) -> null)
                      .build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("dedupHorizon")
          .hasMessageContaining("lease (PT5S)");
    }

    @Test
    void aHorizonOutlastingTheLeasePlusThePollStarts() throws Exception {
      Streams.Stream s = streams.create(Duration.ofMinutes(1));
      NatsRoute route = new NatsRoute(KIND, s.name(), s.subject(), Duration.ofSeconds(60));
      try (NatsTransport t =
          NatsTransport.builder(Streams.options())
              .route(route)
              .workerTimings(Duration.ofSeconds(30), Duration.ofSeconds(2))
              .build()) {
        t.start();
        assertThat(t.kinds()).containsExactly(KIND);
      }
    }

    @Test
    void aHorizonWithinTheWindowStarts() throws Exception {
      Streams.Stream s = streams.create(Duration.ofMinutes(1));
      try (NatsTransport t = started(s, Duration.ofSeconds(60))) {
        assertThat(t.kinds()).containsExactly(KIND);
      }
    }

    @Test
    void theRoutesPolicyCarriesTheHorizonAndKeepsRetriesInsideIt(TestDatabase db) throws Exception {
      Streams.Stream s = streams.create(WINDOW);
      NatsRoute route = new NatsRoute(KIND, s.name(), s.subject(), WINDOW);
      try (NatsTransport t = started(s, WINDOW);
          Relay relay =
              Relay.builder(db.dataSource())
                  .schema(db.schema())
                  .handle(KIND, route.policy(KindPolicy.DEFAULT), t)
                  .build()) {
        KindPolicy p = relay.config().kinds().get(KIND);
        assertThat(p.dedupHorizon()).isEqualTo(WINDOW);
        assertThat(p.maxElapsed()).isEqualTo(WINDOW);
      }
      assertThatThrownBy(
              () ->
                  Relay.builder(db.dataSource())
                      .handle(KIND, KindPolicy.DEFAULT.withDedupHorizon(WINDOW), (c) -> null)
                      .build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("maxElapsed");
    }

    @Test
    void aMissingHorizonOrStreamIsRefused() {
      assertThatThrownBy(() -> new NatsRoute(KIND, "ORDERS", "orders.received", null))
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("dedupHorizon")
          .hasMessageContaining("explicitly");
      NatsTransport t =
          NatsTransport.builder(Streams.options())
              .route(new NatsRoute(KIND, "relay-test-absent", "relay-test.absent", WINDOW))
              .build();
      assertThatThrownBy(t::start)
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("relay-test-absent");
    }
  }

  @Test
  void aMessageOverTheServersMaxPayloadFailsAloneAndAnUncapturedSubjectIsNotDelivered(
      TestDatabase db) throws Exception {
    Streams.Stream s = streams.create(WINDOW);
    List<Work> work = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      work.add(Work.of("order-" + i, KIND, "{\"order\":" + i + "}"));
    }
    work.add(2, Work.of("order-big", KIND, "{\"blob\":\"" + "x".repeat(1_100_000) + "\"}"));
    Streams.enqueue(db.dataSource(), db.schema(), work);
    try (NatsTransport t = started(s, WINDOW)) {
      Map<String, Outcome> outcomes = round(worker(db, t), t, 10);

      Outcome big = outcomes.remove("order-big");
      assertThat(big).isInstanceOf(Outcome.Fail.class);
      assertThat(((Outcome.Fail) big).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
      assertThat(((Outcome.Fail) big).reason()).contains("max_payload");
      assertThat(outcomes.values()).hasSize(5).allMatch(o -> o instanceof Outcome.Done);
    }
    assertThat(streams.messages(s)).isEqualTo(5);

    Streams.enqueue(db.dataSource(), db.schema(), List.of(Work.of("order-lost", KIND, "{}")));
    NatsTransport elsewhere =
        NatsTransport.builder(Streams.options())
            .route(new NatsRoute(KIND, s.name(), s.subject() + ".uncaptured", WINDOW))
            .build();
    elsewhere.start();
    try (elsewhere) {
      Outcome lost = round(worker(db, elsewhere), elsewhere, 10).get("order-lost");
      assertThat(lost).isInstanceOf(Outcome.Retry.class);
      assertThat(((Outcome.Retry) lost).effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
    }
  }

  @Test
  void theBatchSizeIsTheTransportsOwnAndOutOfRangeIsRefused() {
    NatsRoute route = new NatsRoute(KIND, "S", "s.x", Duration.ofMinutes(1));
    try (NatsTransport t =
        NatsTransport.builder(Streams.options()).route(route).maxBatchSize(1).build()) {
      assertThat(t.maxBatchSize()).isEqualTo(1);
    }
    assertThatThrownBy(
            () -> NatsTransport.builder(Streams.options()).route(route).maxBatchSize(1001).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("maxBatchSize");
  }
}
