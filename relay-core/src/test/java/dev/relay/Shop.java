package dev.relay;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Mina's shop, reduced to what the purchase boundary needs: products with stock, orders and their
 * lines, in the test's own schema beside Relay's tables.
 */
final class Shop {
  static final String ACK_PAYLOAD =
      """
      {"order_id":103,"customer_id":1,"total":"29.00",\
      "message":"Order received; payment still pending","template_version":1}""";

  private final String schema;

  Shop(String schema) {
    this.schema = schema;
  }

  void create(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          """
          CREATE TABLE {s}.product (sku text PRIMARY KEY, name text NOT NULL,
                                    price numeric(10,2) NOT NULL,
                                    stock integer NOT NULL CHECK (stock >= 0));
          CREATE TABLE {s}.orders (order_id bigint PRIMARY KEY, customer_id bigint NOT NULL,
                                   total numeric(10,2) NOT NULL, status text NOT NULL);
          CREATE TABLE {s}.order_line (order_id bigint REFERENCES {s}.orders,
                                       sku text REFERENCES {s}.product,
                                       quantity integer NOT NULL,
                                       unit_price numeric(10,2) NOT NULL);
          INSERT INTO {s}.product VALUES ('P3', 'blue mug', 20.00, 11),
                                          ('P7', 'red mug', 18.00, 0),
                                          ('P9', 'green tea', 4.50, 6);
          """
              .replace("{s}", schema));
    }
  }

  /** Order 103's rows, on the caller's connection and transaction (no commit). */
  void storeOrder103(Connection c) {
    Rows.update(c, schema, "INSERT INTO {schema}.orders VALUES (103, 1, 29.00, 'pending')");
    Rows.update(
        c,
        schema,
        "INSERT INTO {schema}.order_line VALUES (103, 'P3', 1, 20.00), (103, 'P9', 2, 4.50)");
    Rows.update(c, schema, "UPDATE {schema}.product SET stock = stock - 1 WHERE sku = 'P3'");
    Rows.update(c, schema, "UPDATE {schema}.product SET stock = stock - 2 WHERE sku = 'P9'");
  }

  long stock(DataSource ds, String sku) {
    return Rows.count(ds, schema, "SELECT stock FROM {schema}.product WHERE sku = ?", sku);
  }

  long orders(DataSource ds) {
    return Rows.count(ds, schema, "SELECT count(*) FROM {schema}.orders");
  }
}
