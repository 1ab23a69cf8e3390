package dev.relay.transport.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.HeldClaim;
import dev.relay.ManualClaims;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.receiver.InvalidReceiverInputException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class BrokerHeadersTest {

  /** Claims every item of kind {@code k} the way a worker would. */
  static List<HeldClaim> enqueueAndClaim(TestDatabase db, Work... works) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(c, List.of(works));
      c.commit();
      c.setAutoCommit(true);
      return ManualClaims.forSchema(db.schema())
          .claim(c, "w1", List.of("default"), List.of("k"), 100, Duration.ofSeconds(30))
          .claimed();
    }
  }

  @Nested
  class FromAClaim {
    @Test
    void unkeyedWorkCarriesItsIdKindAndGenerationOnly(TestDatabase db) throws Exception {
      HeldClaim claim = enqueueAndClaim(db, Work.of("w-1", "k", "{\"a\":1}")).get(0);

      assertThat(BrokerHeaders.of(claim))
          .containsExactly(
              Map.entry(BrokerHeaders.WORK_ID, "w-1"),
              Map.entry(BrokerHeaders.KIND, "k"),
              Map.entry(BrokerHeaders.GENERATION, Long.toString(claim.generation())));
    }

    @Test
    void keyedWorkCarriesKeySequenceAndThePreviousDeliveredSequence(TestDatabase db)
        throws Exception {
      HeldClaim first =
          enqueueAndClaim(db, Work.of("w-1", "k", "{}").orderingKey("order-7")).get(0);
      try (Connection c = db.connection()) {
        ManualClaims.forSchema(db.schema()).settle(c, first, dev.relay.Outcome.done());
      }
      HeldClaim second =
          enqueueAndClaim(db, Work.of("w-2", "k", "{}").orderingKey("order-7")).get(0);

      Map<String, String> h = BrokerHeaders.of(first);
      assertThat(h).containsEntry(BrokerHeaders.ORDERING_KEY, "order-7");
      assertThat(h).containsEntry(BrokerHeaders.SEQUENCE, first.sequence().toString());
      assertThat(h).doesNotContainKey(BrokerHeaders.PREVIOUS_SEQUENCE);
      assertThat(BrokerHeaders.of(second))
          .containsEntry(BrokerHeaders.SEQUENCE, second.sequence().toString())
          .containsEntry(BrokerHeaders.PREVIOUS_SEQUENCE, first.sequence().toString());
    }

    @Test
    void workWithATraceCarriesItsTraceparentAndTracestateButNotItsBaggage(TestDatabase db)
        throws Exception {
      String parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      HeldClaim claim =
          enqueueAndClaim(
                  db,
                  Work.of("w-1", "k", "{}")
                      .traceContext(
                          Map.of("traceparent", parent, "tracestate", "v=1", "baggage", "u=7")))
              .get(0);

      assertThat(BrokerHeaders.of(claim))
          .containsEntry("traceparent", parent)
          .containsEntry("tracestate", "v=1")
          .doesNotContainKey("baggage");
    }

    @Test
    void aFencingTokenTravelsWithItsResource(TestDatabase db) throws Exception {
      HeldClaim claim = enqueueAndClaim(db, Work.of("w-1", "k", "{}")).get(0);

      Map<String, String> h = BrokerHeaders.of(claim, new BrokerHeaders.Fencing("mailbox-1", 42));

      assertThat(h)
          .containsEntry(BrokerHeaders.FENCING_RESOURCE, "mailbox-1")
          .containsEntry(BrokerHeaders.FENCING_TOKEN, "42");
      BrokerDelivery d = BrokerDelivery.read(h::get, claim.payload());
      assertThat(d.workId()).isEqualTo("w-1");
      assertThat(d.kind()).isEqualTo("k");
      assertThat(d.generation()).isEqualTo(claim.generation());
      assertThat(d.fencingResource()).isEqualTo("mailbox-1");
      assertThat(d.fencingToken()).isEqualTo(42L);
    }
  }

  @Nested
  class Encoding {
    @Test
    void valuesAreUtf8Text() {
      byte[] bytes = BrokerHeaders.encode("bestellung-ü-1");
      assertThat(bytes).hasSize("bestellung-ü-1".length() + 1);
      assertThat(BrokerHeaders.decode(bytes)).isEqualTo("bestellung-ü-1");
      assertThat(BrokerHeaders.decode(null)).isNull();
    }
  }

  @Nested
  class Reading {
    private final Map<String, String> h = new HashMap<>(Map.of(BrokerHeaders.WORK_ID, "w-1"));

    @Test
    void onlyTheWorkIdIsRequired() {
      BrokerDelivery d = BrokerDelivery.read(h::get, "{}");
      assertThat(d)
          .isEqualTo(new BrokerDelivery("w-1", null, null, null, null, null, null, null, "{}"));
      assertThat(d.fenced()).isFalse();
    }

    @Test
    void aMissingWorkIdIsRefusedByName() {
      h.remove(BrokerHeaders.WORK_ID);
      assertThatThrownBy(() -> BrokerDelivery.read(h::get, "{}"))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining(BrokerHeaders.WORK_ID);
    }

    @Test
    void aNumberThatIsNotADecimalIsRefusedByName() {
      h.put(BrokerHeaders.GENERATION, "-3");
      assertThatThrownBy(() -> BrokerDelivery.read(h::get, "{}"))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining(BrokerHeaders.GENERATION)
          .hasMessageContaining("-3");
    }

    @Test
    void aTokenWithoutItsResourceIsRefused() {
      h.put(BrokerHeaders.FENCING_TOKEN, "4");
      assertThatThrownBy(() -> BrokerDelivery.read(h::get, "{}"))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining(BrokerHeaders.FENCING_RESOURCE);
    }

    @Test
    void aSequenceWithoutItsKeyIsRefused() {
      h.put(BrokerHeaders.SEQUENCE, "4");
      assertThatThrownBy(() -> BrokerDelivery.read(h::get, "{}"))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining(BrokerHeaders.ORDERING_KEY);
    }
  }

  @Nested
  class Accepted {
    @Test
    void theDoneOutcomeNamesBrokerAcceptedAndWhereTheMessageIs() {
      dev.relay.Outcome.Done done =
          BrokerAccepted.outcome(
              "kafka", "orders-3@1812", new java.util.LinkedHashMap<>(Map.of("topic", "or\"ders")));
      assertThat(done.milestone()).isEqualTo(dev.relay.Milestone.ACCEPTED);
      assertThat(done.receiverRef()).isEqualTo("orders-3@1812");
      assertThat(done.resultJson())
          .isEqualTo(
              "{\"milestone\":\"broker_accepted\",\"broker\":\"kafka\",\"topic\":\"or\\\"ders\"}");
    }
  }
}
