package dev.relay.docs;

import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.IdempotentRequests;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;

/** The code of docs/receivers.md (the whole mail service is {@code receivers.MailService}). */
final class ReceiversSnippets {
  private ReceiversSnippets() {}

  /** The receiver's own effect: record the mail and queue it, returning the result as JSON. */
  static String recordAndQueueMail(Connection tx, String payloadJson) {
    return "{}";
  }

  /** The protected write. */
  static void updateMailboxSettings(Connection c, String settings) {}

  /** The shop of the idempotent-request example. */
  interface Shop {
    String placeOrder(Connection tx, Object request) throws SQLException;
  }

  static String inbox(DataSource dataSource, String messageId, String payloadJson)
      throws SQLException {
    // docs:begin receivers-inbox
    Inbox inbox = Inbox.create();                       // schema "relay"; one shared instance
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      InboxResult r = inbox.process(c, "mailer", messageId, payloadJson,
          tx -> recordAndQueueMail(tx, payloadJson));   // returns the result as JSON text
      c.commit();
      return r.result();                                // the same result on every repeat
    } // on any exception: roll back
    // docs:end
  }

  static void horizon(Inbox inbox, Connection c) {
    // docs:begin receivers-horizon
    inbox.setHorizon(c, "mailer", Duration.ofDays(30));   // operators read it: table relay.inbox_consumer
    int deleted;
    do { deleted = inbox.purge(c, "mailer", 10_000); } while (deleted == 10_000);
    // docs:end
  }

  static void fence(Fence fence, Connection c, long token, String settings) throws SQLException {
    // docs:begin receivers-fence
    FenceResult f = fence.advance(c, "mailbox-1", token);   // same transaction as the write
    if (f.refused()) { c.rollback(); return; }               // a newer holder already wrote
    updateMailboxSettings(c, settings);
    c.commit();
    // docs:end
  }

  static InboxResult idempotentRequest(Connection c, Shop shop, String requestJson, Object req)
      throws SQLException {
    // docs:begin receivers-idempotent-requests
    IdempotentRequests purchases = IdempotentRequests.create("purchase");
    c.setAutoCommit(false);
    InboxResult r = purchases.execute(c, "purchase-103", requestJson, tx -> shop.placeOrder(tx, req));
    c.commit();
    // docs:end
    return r;
  }
}
