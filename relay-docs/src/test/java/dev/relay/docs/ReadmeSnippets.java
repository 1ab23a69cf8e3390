package dev.relay.docs;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
// docs:begin readme-imports
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
// docs:end

/** The code of README.md. */
final class ReadmeSnippets {
  private ReadmeSnippets() {}

  /** The shop's own table writes. */
  interface Shop {
    void storeOrder(Connection c, Order order) throws SQLException;
  }

  /** An order of the shop. */
  interface Order {}

  /** A mail service that returns its message ID. */
  interface Mailer {
    String send(String idempotencyKey, String payload);
  }

  static DataSource pool() {
    // docs:begin readme-hikari
    HikariConfig config = new HikariConfig();               // com.zaxxer.hikari
    config.setJdbcUrl("jdbc:postgresql://db.example.com:5432/shop");
    config.setUsername("shop");
    config.setPassword(System.getenv("SHOP_DB_PASSWORD"));
    DataSource dataSource = new HikariDataSource(config);   // one pool per process; close it on shutdown
    // docs:end
    return dataSource;
  }

  static void tenLines(
      DataSource dataSource, Shop shop, Order order103, String ackJson, Mailer mailer)
      throws SQLException {
    // docs:begin readme-ten-lines
    Migrator.migrate(dataSource, "relay");                      // at start-up; safe from many processes
    try (Connection c = dataSource.getConnection()) {           // producer: the caller's transaction
      c.setAutoCommit(false);
      shop.storeOrder(c, order103);
      Outbox.create().enqueue(c, Work.of("order-103-ack", "order_received", ackJson));
      c.commit();                                               // both or neither; on ANY exception roll back
    }
    Relay relay = Relay.builder(dataSource)                     // worker: one shared instance per process
        .handle("order_received", claim -> Outcome.done(mailer.send(claim.workId(), claim.payload())))
        .build();
    relay.start();                                              // relay.close() on shutdown
    // docs:end
  }
}
