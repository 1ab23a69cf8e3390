package dev.relay.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.EnqueueResult;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import java.math.BigDecimal;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class JsonCodecTest {
  record OrderReceived(String orderId, BigDecimal total, List<String> lines) {}

  private final JsonCodec codec = JsonCodec.create();

  private EnqueueResult enqueue(TestDatabase db, Work work) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      EnqueueResult result = outbox.enqueue(c, work);
      c.commit();
      return result;
    }
  }

  /** A manual worker whose typed handler records each message it receives. */
  private ManualWorker recordingWorker(TestDatabase db, List<OrderReceived> seen) {
    return ManualWorker.builder(db.dataSource())
        .schema(db.schema())
        .handle(
            "order_received",
            codec.handler(
                OrderReceived.class,
                (message, claim) -> {
                  seen.add(message);
                  return Outcome.done();
                }))
        .build();
  }

  @Test
  void typedHandlerReceivesTheRecordThatWasEnqueued(TestDatabase db) throws Exception {
    OrderReceived order = new OrderReceived("103", new BigDecimal("29.00"), List.of("mug"));
    enqueue(db, codec.work("order-103-ack", "order_received", order));
    List<OrderReceived> seen = new CopyOnWriteArrayList<>();
    ManualWorker worker = recordingWorker(db, seen);

    ManualWorker.Attempt attempt = worker.runNext("order_received").orElseThrow();

    assertThat(attempt.outcome()).isInstanceOf(Outcome.Done.class);
    assertThat(seen).containsExactly(order);
  }

  @Test
  void equalObjectUnderTheSameIdIsARepeatAndAChangedOneIsRefused(TestDatabase db) throws Exception {
    OrderReceived order = new OrderReceived("103", new BigDecimal("29.00"), List.of("mug"));
    assertThat(enqueue(db, codec.work("order-103-ack", "order_received", order)).status())
        .isEqualTo(EnqueueResult.Status.ENQUEUED);

    EnqueueResult again =
        enqueue(
            db,
            codec.work(
                "order-103-ack",
                "order_received",
                new OrderReceived("103", new BigDecimal("29.00"), List.of("mug"))));
    assertThat(again.status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);

    OrderReceived changed = new OrderReceived("103", new BigDecimal("31.00"), List.of("mug"));
    assertThatThrownBy(() -> enqueue(db, codec.work("order-103-ack", "order_received", changed)))
        .isInstanceOf(WorkConflictException.class);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
  }

  @Test
  void unreadablePayloadFailsPermanentlyNamingTheTypeAndTheError(TestDatabase db) throws Exception {
    enqueue(db, Work.of("order-104-ack", "order_received", "{\"orderId\": [1, 2]}"));
    List<OrderReceived> seen = new CopyOnWriteArrayList<>();
    ManualWorker worker = recordingWorker(db, seen);

    ManualWorker.Attempt attempt = worker.runNext("order_received").orElseThrow();

    assertThat(seen).isEmpty();
    assertThat(attempt.outcome()).isInstanceOf(Outcome.Fail.class);
    Outcome.Fail fail = (Outcome.Fail) attempt.outcome();
    assertThat(fail.effect()).isEqualTo(Outcome.Effect.NOT_DELIVERED);
    assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'order-104-ack'"))
        .isEqualTo("failed");
    assertThat(
            db.queryString("SELECT last_error FROM {schema}.work WHERE work_id = 'order-104-ack'"))
        .contains("unreadable payload", OrderReceived.class.getName(), "orderId");
    assertThat(worker.runNext("order_received")).isEmpty();
  }

  @Test
  void nullAndUnwritableMessagesAreRefusedBeforeAnythingIsSent() {
    assertThatThrownBy(() -> codec.write(null))
        .isInstanceOf(dev.relay.InvalidWorkException.class)
        .hasMessageContaining("payload");
    assertThatThrownBy(() -> codec.read("null", OrderReceived.class))
        .isInstanceOf(UnreadablePayloadException.class)
        .hasMessageContaining("JSON null");
  }
}
