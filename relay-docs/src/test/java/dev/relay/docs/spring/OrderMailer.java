package dev.relay.docs.spring;

// docs:begin spring-handler
import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.spring.RelayHandler;
import org.springframework.stereotype.Component;

@Component
class OrderMailer {
  private final MailProvider mail;

  OrderMailer(MailProvider mail) {
    this.mail = mail;
  }

  @RelayHandler(kind = "order_received")
  Outcome on(OrderReceived order, Claim claim) throws Exception {
    String messageId = mail.send(claim.workId(), order.email(), "Thanks for order " + order.orderId());
    return Outcome.done(messageId);
  }
}
// docs:end
