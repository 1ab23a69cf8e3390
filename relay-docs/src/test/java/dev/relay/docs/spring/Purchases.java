package dev.relay.docs.spring;

// docs:begin spring-enqueue
import dev.relay.EnqueueResult;
import dev.relay.spring.RelayOutbox;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
class Purchases {
  private final Orders orders;
  private final RelayOutbox outbox;

  Purchases(Orders orders, RelayOutbox outbox) {
    this.orders = orders;
    this.outbox = outbox;
  }

  @Transactional
  public EnqueueResult purchase(Order order) {
    orders.save(order);
    return outbox.enqueue(
        "order-" + order.id() + "-ack",                  // the work ID: stable per intention
        "order_received",
        new OrderReceived(order.id(), order.email(), order.total()));
  } // commit: both; an exception: neither
}
// docs:end
