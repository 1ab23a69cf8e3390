package dev.relay.docs;

import dev.relay.Handler;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.docs.spring.MailProvider;
import dev.relay.docs.spring.Order;
import dev.relay.docs.spring.OrderReceived;
import dev.relay.jackson.JsonCodec;
import dev.relay.receiver.http.HttpReply;
import dev.relay.spring.InboxTemplate;
import dev.relay.spring.RelayHandler;
import dev.relay.spring.RelayHttpReceivers;
import dev.relay.spring.autoconfigure.RelayCustomizer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.Executors;
import javax.sql.DataSource;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/** The code of docs/spring.md. */
final class SpringSnippets {
  private SpringSnippets() {}

  // docs:begin spring-handler-bean
  @Configuration
  class Handlers {
    @Bean
    @RelayHandler(kind = "audit_export")
    Handler auditExport() {
      return claim -> Outcome.done();                       // claim.payload() is the JSON text
    }

    @Bean
    RelayCustomizer handlerThreads() {
      return builder -> builder.executor(Executors.newFixedThreadPool(8));
    }
  }
  // docs:end

  /** The mail service's table. */
  interface Mails {
    void queue(String messageId, String payloadJson);
  }

  // docs:begin spring-inbox
  @Service
  class MailReceiver {
    private final InboxTemplate inbox;
    private final Mails mails;

    MailReceiver(InboxTemplate inbox, Mails mails) {
      this.inbox = inbox;
      this.mails = mails;
    }

    @Transactional
    public String receive(String messageId, String payloadJson) {
      return inbox.process("mailer", messageId, payloadJson, c -> {
        mails.queue(messageId, payloadJson);                // runs for the first delivery only
        return "{\"queued\": true}";
      }).result();                                          // a repeat gets the saved result
    }
  }
  // docs:end

  // docs:begin spring-inbox-traced
  @Transactional
  public void onMessage(Map<String, String> headers, String payloadJson) {
    // headers: a broker message's, read as text (relay-work-id, traceparent, tracestate)
    inbox.process("billing", headers.get("relay-work-id"), payloadJson,
        headers::get,                       // the effect runs in a span continuing the sender's
        c -> {
          invoices.record(c, payloadJson);
          return "{}";
        });
  }
  // docs:end

  private InboxTemplate inbox;
  private Invoices invoices;

  /** The billing service's table. */
  interface Invoices {
    void record(Connection c, String payloadJson) throws SQLException;
  }

  /** The mailer's write: one mail per delivery, on the receiver's connection. */
  static void queueMail(Connection c, String messageId, String payloadJson) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO sent_mail (message_id, body) VALUES (?, ?)")) {
      ps.setString(1, messageId);
      ps.setString(2, payloadJson);
      ps.executeUpdate();
    }
  }

  // docs:begin spring-http-receiver
  @RestController
  class MailerController {
    private final RelayHttpReceivers receivers;

    MailerController(RelayHttpReceivers receivers) {
      this.receivers = receivers;
    }

    @PostMapping("/mailer/acks")
    ResponseEntity<String> receive(@RequestHeader HttpHeaders headers, @RequestBody String body) {
      return receivers.handle("mailer", headers, body, (connection, delivery) -> {
        queueMail(connection, delivery.messageId(), delivery.body()); // the first delivery only
        return HttpReply.json(200, "{\"mail\": \"queued\"}");     // stored, sent to repeats
      });
    }
  }
  // docs:end

  static Relay plainJava(DataSource dataSource, MailProvider mail, Connection c, Order order)
      throws SQLException {
    // docs:begin jackson-plain
    JsonCodec codec = JsonCodec.create();                   // or JsonCodec.using(yourJsonMapper)
    Outbox.create().enqueue(c, codec.work("order-103-ack", "order_received",
        new OrderReceived(order.id(), order.email(), order.total())));

    Relay relay = Relay.builder(dataSource)
        .handle("order_received", codec.handler(OrderReceived.class,
            (message, claim) -> Outcome.done(mail.send(claim.workId(), message.email(), "Thanks"))))
        .build();
    // docs:end
    return relay;
  }
}
