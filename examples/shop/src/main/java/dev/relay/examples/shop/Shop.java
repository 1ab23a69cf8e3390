package dev.relay.examples.shop;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.receiver.IdempotentRequests;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxResult;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Mina's shop: products, customers, orders, order lines and stock on PostgreSQL, and a purchase
 * that stores the order and enqueues its acknowledgement ({@code order-<id>-ack}, kind {@value
 * #ACK_KIND}) in <b>one</b> transaction.
 *
 * <pre>{@code
 * Shop shop = Shop.create("shop", "relay");
 * shop.install(dataSource);                          // tables + Mina, P3, P7, P9
 * Receipt r = shop.purchase(dataSource, "purchase-103", Purchase.of(1, "P3", 1, "P9", 2));
 * // r.orderId() == 103, r.total() == 29.00; a retry with "purchase-103" returns the same receipt
 * }</pre>
 *
 * <p>What the acknowledgement's payload holds, and what it does not: it captures what must stay as
 * it was when the order was placed (order number, customer number, the agreed total as a string,
 * the message "received, payment pending", the template and its version). The recipient's address
 * is <i>not</i> in it: the mail receiver resolves it from the customer record at delivery time
 * ({@link #recipientOf}), so a corrected address is used by a later delivery.
 *
 * <p>The purchase runs through {@link IdempotentRequests} with the client's request token: a retry
 * of the same request returns the stored receipt and writes nothing; a request that fails (an item
 * sold out) rolls back and leaves no order, no stock change and no work. Thread-safe.
 */
public final class Shop {
  /** The kind of the acknowledgement work. */
  public static final String ACK_KIND = "order_received";

  /** The template version captured in the acknowledgement payload. */
  public static final int ACK_TEMPLATE_VERSION = 1;

  /** The first order number: the story's order is 103. */
  public static final long FIRST_ORDER_ID = 103;

  private static final Pattern IDENT = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  private final String shop;
  private final Outbox outbox;
  private final IdempotentRequests purchases;

  private Shop(String shopSchema, String relaySchema) {
    this.shop = shopSchema;
    this.outbox = Outbox.builder().schema(relaySchema).build();
    this.purchases =
        IdempotentRequests.using(Inbox.builder().schema(relaySchema).build(), "purchase");
  }

  /**
   * A shop whose tables live in {@code shopSchema}, enqueueing into Relay's {@code relaySchema}
   * (already migrated) in the same database.
   *
   * @param shopSchema lower-case identifier for the shop's tables
   * @param relaySchema Relay's schema
   * @return the shop
   */
  public static Shop create(String shopSchema, String relaySchema) {
    if (shopSchema == null || !IDENT.matcher(shopSchema).matches()) {
      throw new IllegalArgumentException("shopSchema must be a lower-case identifier");
    }
    return new Shop(shopSchema, relaySchema);
  }

  /** The shop's schema. */
  public String schema() {
    return shop;
  }

  /**
   * Creates the shop's tables and the story's starting rows: customer 1 (Mina), products P3 (blue
   * mug, 20.00, stock 11), P7 (sold out, stock 0) and P9 (green tea, 4.50, stock 6).
   *
   * @param ds the database
   * @throws SQLException if the tables exist already or the database fails
   */
  public void install(DataSource ds) throws SQLException {
    String sql =
        """
        CREATE SCHEMA IF NOT EXISTS %1$s;
        CREATE TABLE %1$s.customer (
            customer_id bigint PRIMARY KEY,
            name        text NOT NULL,
            email       text NOT NULL);
        CREATE TABLE %1$s.product (
            sku   text PRIMARY KEY,
            name  text NOT NULL,
            price numeric(10,2) NOT NULL CHECK (price >= 0));
        CREATE TABLE %1$s.stock (
            sku      text PRIMARY KEY REFERENCES %1$s.product,
            quantity integer NOT NULL CHECK (quantity >= 0));
        -- Order numbers start at 103; a rolled-back purchase leaves a gap (sequences never rewind).
        CREATE SEQUENCE %1$s.order_id_seq START WITH 103;
        CREATE TABLE %1$s.orders (
            order_id    bigint PRIMARY KEY DEFAULT nextval('%1$s.order_id_seq'),
            customer_id bigint NOT NULL REFERENCES %1$s.customer,
            total       numeric(10,2) NOT NULL,
            status      text NOT NULL CHECK (status IN ('pending', 'paid', 'cancelled')),
            payment_ref text,
            placed_at   timestamptz NOT NULL DEFAULT clock_timestamp());
        CREATE TABLE %1$s.order_line (
            order_id   bigint NOT NULL REFERENCES %1$s.orders,
            line_no    integer NOT NULL,
            sku        text NOT NULL REFERENCES %1$s.product,
            unit_price numeric(10,2) NOT NULL,
            quantity   integer NOT NULL CHECK (quantity > 0),
            PRIMARY KEY (order_id, line_no));
        INSERT INTO %1$s.customer VALUES (1, 'Mina', 'mina@example.test');
        INSERT INTO %1$s.product VALUES ('P3', 'blue mug', 20.00), ('P7', 'red kettle', 35.00),
                                        ('P9', 'green tea', 4.50);
        INSERT INTO %1$s.stock VALUES ('P3', 11), ('P7', 0), ('P9', 6);
        """
            .formatted(shop);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /**
   * Places a purchase once per request token. The order, its lines, the stock decrements and the
   * acknowledgement work commit together, with the stored receipt of the request; a retry with the
   * same token and an equal request returns that receipt ({@link Receipt#replayed()} true).
   *
   * @param ds the shop's database
   * @param requestToken the client's idempotency token, e.g. {@code purchase-103}
   * @param purchase what to buy
   * @return the receipt
   * @throws SoldOutException if an item lacks stock: nothing was written
   * @throws SQLException if the database fails: nothing was written, or (commit lost) a retry with
   *     the same token finds out
   */
  public Receipt purchase(DataSource ds, String requestToken, Purchase purchase)
      throws SQLException {
    Objects.requireNonNull(purchase, "purchase");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        InboxResult r =
            purchases.execute(c, requestToken, purchase.toJson(), tx -> placeOrder(tx, purchase));
        c.commit();
        return Receipt.fromJson(requestToken, r.result(), r.duplicate());
      } catch (RuntimeException | SQLException e) {
        // Any failure: the order, stock, work and the request record roll back together.
        // SoldOutException is unchecked, so the inbox passes it through unchanged.
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  private String placeOrder(Connection tx, Purchase purchase) throws SQLException {
    BigDecimal total = BigDecimal.ZERO;
    List<BigDecimal> prices = new ArrayList<>();
    for (Purchase.Line line : purchase.lines()) {
      // Take the stock first: zero rows means not enough left, and the whole purchase fails.
      try (PreparedStatement ps =
          tx.prepareStatement(
              "UPDATE "
                  + shop
                  + ".stock SET quantity = quantity - ? WHERE sku = ? AND quantity >= ?")) {
        ps.setInt(1, line.quantity());
        ps.setString(2, line.sku());
        ps.setInt(3, line.quantity());
        if (ps.executeUpdate() != 1) {
          throw new SoldOutException(line.sku(), line.quantity());
        }
      }
      BigDecimal price = price(tx, line.sku());
      prices.add(price);
      total = total.add(price.multiply(BigDecimal.valueOf(line.quantity())));
    }
    long orderId;
    try (PreparedStatement ps =
        tx.prepareStatement(
            "INSERT INTO "
                + shop
                + ".orders (customer_id, total, status) VALUES (?, ?, 'pending')"
                + " RETURNING order_id")) {
      ps.setLong(1, purchase.customerId());
      ps.setBigDecimal(2, total);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        orderId = rs.getLong(1);
      }
    }
    try (PreparedStatement ps =
        tx.prepareStatement("INSERT INTO " + shop + ".order_line VALUES (?, ?, ?, ?, ?)")) {
      for (int i = 0; i < purchase.lines().size(); i++) {
        Purchase.Line line = purchase.lines().get(i);
        ps.setLong(1, orderId);
        ps.setInt(2, i + 1);
        ps.setString(3, line.sku());
        ps.setBigDecimal(4, prices.get(i));
        ps.setInt(5, line.quantity());
        ps.addBatch();
      }
      ps.executeBatch();
    }
    String totalText = total.setScale(2).toPlainString();
    // Same transaction, same connection: the acknowledgement commits or rolls back with the order.
    outbox.enqueue(
        tx,
        Work.of(ackId(orderId), ACK_KIND, ackPayload(orderId, purchase.customerId(), totalText)));
    return String.format(
        Locale.ROOT,
        "{\"order_id\":%d,\"customer_id\":%d,\"total\":\"%s\",\"status\":\"pending\",\"work_id\":\"%s\"}",
        orderId,
        purchase.customerId(),
        totalText,
        ackId(orderId));
  }

  private BigDecimal price(Connection tx, String sku) throws SQLException {
    try (PreparedStatement ps =
        tx.prepareStatement("SELECT price FROM " + shop + ".product WHERE sku = ?")) {
      ps.setString(1, sku);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("no product " + sku);
        }
        return rs.getBigDecimal(1);
      }
    }
  }

  /** The acknowledgement's work ID for an order: {@code order-<id>-ack}. */
  public static String ackId(long orderId) {
    return "order-" + orderId + "-ack";
  }

  /**
   * The acknowledgement payload: what must stay historical. The total is a string so that it is
   * compared as the agreed text ({@code "29.00"}), not re-rounded; no address is captured.
   */
  public static String ackPayload(long orderId, long customerId, String total) {
    return String.format(
        Locale.ROOT,
        "{\"order_id\":%d,\"customer_id\":%d,\"total\":\"%s\",\"message\":\"%s\","
            + "\"template\":\"%s\",\"template_version\":%d}",
        orderId,
        customerId,
        total,
        "We have received your order; payment is still pending.",
        ACK_KIND,
        ACK_TEMPLATE_VERSION);
  }

  /**
   * The customer's current email address, read at delivery time (never captured in the payload).
   *
   * @param c a connection to the shop's database
   * @param customerId the customer
   * @return the address
   * @throws SQLException if the customer does not exist or the database fails
   */
  public String recipientOf(Connection c, long customerId) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT email FROM " + shop + ".customer WHERE customer_id = ?")) {
      ps.setLong(1, customerId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("no customer " + customerId);
        }
        return rs.getString(1);
      }
    }
  }
}
