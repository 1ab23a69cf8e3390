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
   * @throws SoldOutException when a line asks for more than the stock; nothing is kept
   * @throws dev.relay.receiver.PayloadMismatchException when {@code key} was used for another
   *     request
   */
  @Transactional
  public Receipt purchase(String key, PurchaseRequest request) {
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

  private Product product(String sku) {
    return products
        .findById(sku)
        .orElseThrow(() -> new IllegalArgumentException("no product " + sku));
  }
}
