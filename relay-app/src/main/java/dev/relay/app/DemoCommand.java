package dev.relay.app;

import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.ClaimRequest;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.WorkStore;
import dev.relay.internal.store.WriteResult;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Mina's order 103, end to end on a real database: the purchase and its outbox row in one
 * transaction, a worker's claim under a lease, the guarded completion, and the row as stored.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Runs Mina's order 103 end to end: purchase + outbox row in one transaction, a claim,",
      "a guarded completion, and prints the stored row. Uses an embedded PostgreSQL 18 unless",
      "--jdbc-url names a database (the demo then creates schemas relay_demo and shop_demo)."
    })
final class DemoCommand implements Callable<Integer> {
  private static final String ACK =
      "{\"order_id\":103,\"customer_id\":1,\"total\":\"29.00\","
          + "\"message\":\"Order received; payment still pending\",\"template_version\":1}";

  @Option(
      names = "--jdbc-url",
      description = "JDBC URL of a PostgreSQL 15+ database (default: embedded PostgreSQL).")
  String jdbcUrl = System.getenv("RELAY_JDBC_URL");

  private final PrintStream out = System.out;

  @Override
  public Integer call() throws Exception {
    try (Database db = Database.open(jdbcUrl, System.err)) {
      run(db.dataSource());
      return 0;
    } catch (SQLException e) {
      System.err.println("relay demo: database unavailable: " + e.getMessage());
      return 3;
    }
  }

  private void run(DataSource ds) throws SQLException {
    String schema = "relay_demo";
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "DROP SCHEMA IF EXISTS relay_demo CASCADE; DROP SCHEMA IF EXISTS shop_demo CASCADE");
    }
    Migrator.Report report = Migrator.migrate(ds, schema);
    step(
        "Relay's schema is migrated",
        "schema " + schema + " at version " + report.currentVersion());

    createShop(ds);
    Outbox outbox = Outbox.builder().schema(schema).build();
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      update(c, "INSERT INTO shop_demo.orders VALUES (103, 1, 29.00, 'pending')");
      update(c, "UPDATE shop_demo.product SET stock = stock - 1 WHERE sku = 'P3'");
      update(c, "UPDATE shop_demo.product SET stock = stock - 2 WHERE sku = 'P9'");
      outbox.enqueue(c, Work.of("order-103-ack", "order_received", ACK));
      c.commit();
    }
    step(
        "Purchase: order 103 (29.00, pending) and work order-103-ack commit in ONE transaction",
        query(ds, "SELECT order_id, total, status FROM shop_demo.orders")
            + "\n"
            + query(ds, "SELECT sku, stock FROM shop_demo.product ORDER BY sku"));

    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      update(c, "INSERT INTO shop_demo.orders VALUES (104, 1, 18.00, 'pending')");
      outbox.enqueue(c, Work.of("order-104-ack", "order_received", "{\"order_id\":104}"));
      c.rollback();
    }
    step(
        "Rollback counterexample: order 104 and its work roll back together",
        query(
            ds,
            "SELECT count(*) AS rows_for_104 FROM "
                + schema
                + ".outbox WHERE work_id = 'order-104-ack'"));

    WorkStore store = new WorkStore(SchemaName.of(schema), Timeouts.DEFAULT);
    ClaimedWork claim;
    try (Connection c = ds.getConnection()) {
      List<ClaimedWork> claimed =
          store
              .claim(
                  c,
                  new ClaimRequest(
                      "worker-a",
                      List.of("default"),
                      List.of("order_received"),
                      10,
                      Duration.ofMinutes(1)))
              .claimed();
      claim = claimed.get(0);
    }
    step(
        "Worker A claims order-103-ack under a one-minute lease (generation "
            + claim.generation()
            + ")",
        row(ds, schema));

    try (Connection c = ds.getConnection()) {
      WriteResult stale = store.complete(c, "worker-b", claim.ref(), null, null, null);
      step(
          "A completion that names someone else's claim is refused (stale=" + stale.stale() + ")",
          row(ds, schema));
      WriteResult done =
          store.complete(
              c, "worker-a", claim.ref(), "mail-7731", "{\"accepted\":true}", "accepted");
      step(
          "Worker A records completion: lock the row, then check owner, generation and lease"
              + " (applied="
              + done.applied()
              + ")",
          row(ds, schema));
    }
    out.println("Done. Relay guarantees the order and its acknowledgement commit together;");
    out.println("it never claims the email was sent exactly once (see docs/protocol.md).");
  }

  private static void createShop(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          """
          CREATE SCHEMA shop_demo;
          CREATE TABLE shop_demo.product (sku text PRIMARY KEY, price numeric(10,2) NOT NULL,
                                          stock integer NOT NULL CHECK (stock >= 0));
          CREATE TABLE shop_demo.orders (order_id bigint PRIMARY KEY, customer_id bigint NOT NULL,
                                         total numeric(10,2) NOT NULL, status text NOT NULL);
          INSERT INTO shop_demo.product VALUES ('P3', 20.00, 11), ('P7', 18.00, 0), ('P9', 4.50, 6);
          """);
    }
  }

  private static void update(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.executeUpdate(sql);
    }
  }

  private static String row(DataSource ds, String schema) throws SQLException {
    return query(
        ds,
        "SELECT work_id, state, claim_generation, claimed_by, attempts, outcome, receiver_ref,"
            + " lease_until IS NOT NULL AS leased, completed_at IS NOT NULL AS completed FROM "
            + schema
            + ".outbox WHERE work_id = 'order-103-ack'");
  }

  private static String query(DataSource ds, String sql) throws SQLException {
    StringBuilder b = new StringBuilder();
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        b.append("    ");
        for (int i = 1; i <= n; i++) {
          if (i > 1) {
            b.append("  ");
          }
          b.append(rs.getMetaData().getColumnLabel(i)).append('=').append(rs.getString(i));
        }
        b.append('\n');
      }
    }
    return b.toString().stripTrailing();
  }

  private void step(String title, String detail) {
    out.println("== " + title);
    if (!detail.isEmpty()) {
      out.println(detail);
    }
    out.println();
  }
}
