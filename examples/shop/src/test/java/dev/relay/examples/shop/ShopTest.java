package dev.relay.examples.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.math.BigDecimal;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class ShopTest {
  private Shop shop;

  @BeforeEach
  void install(TestDatabase db) throws Exception {
    shop = Shop.create(db.schema() + "_shop", db.schema());
    db.execute("DROP SCHEMA IF EXISTS " + shop.schema() + " CASCADE");
    shop.install(db.dataSource());
  }

  private Receipt buy103(TestDatabase db) throws Exception {
    return shop.purchase(db.dataSource(), "purchase-103", Purchase.of(1, "P3", 1, "P9", 2));
  }

  @Test
  void purchaseStoresOrder103AndItsAcknowledgementTogether(TestDatabase db) throws Exception {
    Receipt r = buy103(db);

    assertThat(r.orderId()).isEqualTo(103);
    assertThat(r.total()).isEqualByComparingTo(new BigDecimal("29.00"));
    assertThat(r.replayed()).isFalse();
    String s = shop.schema();
    assertThat(
            db.queryString(
                "SELECT customer_id || ' ' || total || ' ' || status || ' '"
                    + " || coalesce(payment_ref, 'no-payment') FROM "
                    + s
                    + ".orders"))
        .isEqualTo("1 29.00 pending no-payment");
    assertThat(
            db.queryString(
                "SELECT string_agg(sku || 'x' || quantity || '@' || unit_price, ',' ORDER BY"
                    + " line_no) FROM "
                    + s
                    + ".order_line WHERE order_id = 103"))
        .isEqualTo("P3x1@20.00,P9x2@4.50");
    assertThat(
            db.queryString(
                "SELECT string_agg(sku || '=' || quantity, ',' ORDER BY sku) FROM " + s + ".stock"))
        .isEqualTo("P3=10,P7=0,P9=4");
    assertThat(
            db.queryString(
                "SELECT kind || ' ' || state FROM {schema}.work WHERE work_id = 'order-103-ack'"))
        .isEqualTo("order_received ready");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
  }

  @Test
  void payloadKeepsWhatMustStayHistoricalAndNoAddress(TestDatabase db) throws Exception {
    buy103(db);

    String payload =
        "SELECT payload FROM {schema}.work WHERE work_id = 'order-103-ack' AND payload = '"
            + Shop.ackPayload(103, 1, "29.00")
            + "'::jsonb";
    assertThat(db.queryString(payload)).contains("\"total\": \"29.00\"");
    assertThat(db.queryString("SELECT payload->>'template_version' FROM {schema}.work"))
        .isEqualTo("1");
    assertThat(db.queryString("SELECT payload->>'message' FROM {schema}.work"))
        .contains("received")
        .contains("payment is still pending");
    assertThat(db.queryString("SELECT payload::text FROM {schema}.work")).doesNotContain("@");
  }

  @Test
  void retriedRequestReturnsTheSameOrderAndWritesNothing(TestDatabase db) throws Exception {
    Receipt first = buy103(db);
    Receipt again = buy103(db);

    assertThat(again.orderId()).isEqualTo(first.orderId()).isEqualTo(103);
    assertThat(again.replayed()).isTrue();
    assertThat(again.workId()).isEqualTo("order-103-ack");
    assertThat(db.queryLong("SELECT count(*) FROM " + shop.schema() + ".orders")).isEqualTo(1);
    assertThat(db.queryLong("SELECT quantity FROM " + shop.schema() + ".stock WHERE sku = 'P3'"))
        .isEqualTo(10);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
  }

  @Test
  void soldOutItemLeavesNoOrderAndNoWork(TestDatabase db) throws Exception {
    assertThatThrownBy(
            () -> shop.purchase(db.dataSource(), "purchase-p7", Purchase.of(1, "P3", 1, "P7", 1)))
        .isInstanceOf(SoldOutException.class)
        .hasMessageContaining("P7");

    assertThat(db.queryLong("SELECT count(*) FROM " + shop.schema() + ".orders")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM " + shop.schema() + ".order_line")).isZero();
    assertThat(db.queryLong("SELECT quantity FROM " + shop.schema() + ".stock WHERE sku = 'P3'"))
        .isEqualTo(11);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.inbox")).isZero();
  }

  @Test
  void recipientIsResolvedFromTheCustomerRecord(TestDatabase db) throws Exception {
    try (var c = db.connection()) {
      assertThat(shop.recipientOf(c, 1)).isEqualTo("mina@example.test");
    }
  }
}
