package dev.relay.docs.receivers;

// docs:begin receivers-mail-service
import com.sun.net.httpserver.HttpServer;
import dev.relay.Migrator;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.http.*;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;

public final class MailService {
  public static void main(String[] args) throws Exception {
    DataSource ds = Db.pool();                               // the mail service's own database
    Migrator.migrate(ds, "relay");                           // inbox, fence tables
    try (var c = ds.getConnection()) {                       // keep IDs 30 days; senders stay below
      Inbox.create().setHorizon(c, "mailer", Duration.ofDays(30));
    }
    HttpReceiver receiver = HttpReceiver.builder(ds).consumer("mailer").build();

    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 8081), 0);
    server.createContext("/deliveries", exchange -> {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      HttpReply reply = receiver.handle(exchange.getRequestHeaders()::getFirst, body,
          (tx, delivery) -> {
            // The effect: queue the mail in our own table, in the inbox's transaction.
            // A separate sender process delivers queued mail with the provider's own
            // idempotency key = delivery.messageId(), so that boundary is covered too.
            try (PreparedStatement ps = tx.prepareStatement(
                "INSERT INTO mail_queue (message_id, payload) VALUES (?, ?::jsonb)")) {
              ps.setString(1, delivery.messageId());
              ps.setString(2, delivery.body());
              ps.executeUpdate();
            }
            return HttpReply.json(202, "{\"queued\":\"" + delivery.messageId() + "\"}");
          });
      byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", reply.contentType());
      reply.headers().forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
      exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
      try (var os = exchange.getResponseBody()) { os.write(out); }
    });
    server.start();
    // A maintenance thread calls inbox.purge(c, "mailer", 10_000) periodically.
  }
}
// docs:end
