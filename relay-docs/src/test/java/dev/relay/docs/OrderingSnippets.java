package dev.relay.docs;

import dev.relay.Outbox;
import dev.relay.Work;
import java.sql.Connection;

/** The code of docs/ordering.md. */
final class OrderingSnippets {
  private OrderingSnippets() {}

  static void orderingKey(Outbox outbox, Connection c, String received, String dispatched) {
    // docs:begin ordering-key
    outbox.enqueue(c, Work.of("order-103-received", "order_event", received).orderingKey("order-103"));
    outbox.enqueue(c, Work.of("order-103-dispatched", "order_event", dispatched).orderingKey("order-103"));
    // docs:end
  }
}
