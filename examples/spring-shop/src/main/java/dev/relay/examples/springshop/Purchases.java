package dev.relay.examples.springshop;

import dev.relay.examples.springshop.Messages.Line;
import dev.relay.examples.springshop.Messages.OrderReceived;
import dev.relay.examples.springshop.Messages.PurchaseRequest;
import dev.relay.examples.springshop.Messages.Receipt;
import dev.relay.spring.InboxTemplate;
import dev.relay.spring.RelayOutbox;
import java.math.BigDecimal;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.ObjectMapper;

/**
 * The purchase: in one transaction, the order (JPA), its acknowledgement work ({@link RelayOutbox})
 * and the stock decrements; the request key's record ({@link InboxTemplate}) makes a retry with the
 * same {@code Idempotency-Key} return the first answer without a second order or second work.
 */
@Service
public class Purchases {
  /** The most of one product a line may ask for. */
  static final int MAX_QUANTITY = 100;

  private final Products products;
  private final Orders orders;
  private final RelayOutbox outbox;
  private final InboxTemplate requests;
  private final ObjectMapper json;

  Purchases(
      Products products,
      Orders orders,
      RelayOutbox outbox,
      InboxTemplate requests,
      ObjectMapper json) {
    this.products = products;
    this.orders = orders;
    this.outbox = outbox;
    this.requests = requests;
    this.json = json;
  }

  /**
   * Places the order once per {@code key}.
   *
   * @throws InvalidPurchaseException when the request names no customer or no lines, an unknown
   *     SKU, or a quantity outside 1-{@value #MAX_QUANTITY}; nothing is kept, the key is not used
   * @throws SoldOutException when a line asks for more than the stock; nothing is kept
   * @throws dev.relay.receiver.PayloadMismatchException when {@code key} was used for another
   *     request
   */
  @Transactional
  public Receipt purchase(String key, PurchaseRequest request) {
    check(request);
    String answer =
        requests
            .process(
                "purchases",
                key,
                json.writeValueAsString(request),
                c -> json.writeValueAsString(place(request)))
            .result();
    return json.readValue(answer, Receipt.class);
  }

  private Receipt place(PurchaseRequest request) {
    ShopOrder order = orders.save(new ShopOrder(request.customer()));
    for (Line line : request.lines()) {
      Product p = product(line.sku());
      order.add(p.price().multiply(BigDecimal.valueOf(line.quantity())));
    }
    String total = order.total().setScale(2).toPlainString();
    String work = "order-" + order.id() + "-ack";
    outbox.enqueue(
        work,
        "order_received",
        new OrderReceived(
            order.id(), request.customer(), total, "Order received; payment still pending"));
    for (Line line : request.lines()) {
      product(line.sku()).take(line.quantity()); // P7 is sold out: throws after the enqueue
    }
    return new Receipt(order.id(), total, work);
  }

  /** Refuses a request no stock could satisfy, naming the field, before the key is recorded. */
  private void check(PurchaseRequest request) {
    if (request.customer() == null || request.customer().isBlank()) {
      throw new InvalidPurchaseException("customer is missing");
    }
    if (request.lines() == null || request.lines().isEmpty()) {
      throw new InvalidPurchaseException("lines is empty: a purchase needs at least one line");
    }
    for (int i = 0; i < request.lines().size(); i++) {
      Line line = request.lines().get(i);
      String at = "lines[" + i + "]";
      if (line == null || line.sku() == null || line.sku().isBlank()) {
        throw new InvalidPurchaseException(at + ".sku is missing");
      }
      if (line.quantity() == null) {
        throw new InvalidPurchaseException(at + ".quantity is missing");
      }
      if (line.quantity() < 1 || line.quantity() > MAX_QUANTITY) {
        throw new InvalidPurchaseException(
            at + ".quantity must be 1-" + MAX_QUANTITY + ", was " + line.quantity());
      }
      if (!products.existsById(line.sku())) {
        throw new InvalidPurchaseException(at + ".sku: no product " + line.sku());
      }
    }
  }

  private Product product(String sku) {
    // check() found every SKU, in this transaction
    return products.findById(sku).orElseThrow();
  }
}
