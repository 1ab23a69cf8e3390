package dev.relay.examples.springshop;

import dev.relay.receiver.http.HttpReply;
import dev.relay.spring.RelayHttpReceivers;
import java.sql.PreparedStatement;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The mailer: receives acknowledgements at {@code POST /mailer/acks} and queues one mail per {@code
 * Idempotency-Key}; a repeated delivery gets the stored answer and queues nothing.
 */
@RestController
public class MailerController {
  private final RelayHttpReceivers receivers;

  MailerController(RelayHttpReceivers receivers) {
    this.receivers = receivers;
  }

  /** One delivery of an acknowledgement. */
  @PostMapping("/mailer/acks")
  ResponseEntity<String> receive(@RequestHeader HttpHeaders headers, @RequestBody String body) {
    return receivers.handle(
        "mailer",
        headers,
        body,
        (connection, delivery) -> {
          try (PreparedStatement ps =
              connection.prepareStatement(
                  "INSERT INTO sent_mail (message_id, body) VALUES (?, ?)")) {
            ps.setString(1, delivery.messageId());
            ps.setString(2, delivery.body());
            ps.executeUpdate();
          }
          return HttpReply.json(200, "{\"mail\": \"queued\"}");
        });
  }
}
