package dev.relay.transport.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Relay;
import dev.relay.examples.shop.LoopbackMailer;
import dev.relay.examples.shop.Purchase;
import dev.relay.examples.shop.Shop;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The transport registered with a real worker: order 103's acknowledgement reaches the mailer. */
@RelayDatabaseTest
class HttpTransportRuntimeTest {
  @Test
  void workerDeliversTheAcknowledgementAndRecordsTheMailersReference(TestDatabase db)
      throws Exception {
    Shop shop = Shop.create(db.schema() + "_shop", db.schema());
    db.execute("DROP SCHEMA IF EXISTS " + shop.schema() + " CASCADE");
    shop.install(db.dataSource());
    shop.purchase(db.dataSource(), "purchase-103", Purchase.of(1, "P3", 1, "P9", 2));

    try (LoopbackMailer mailer =
        LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
      mailer.dropNextReply(); // the first attempt is accepted, its reply lost
      HttpTransport http =
          HttpTransport.builder()
              .route(HttpRoute.of(Shop.ACK_KIND, mailer.mailUri()).withReceiverRefField("email_id"))
              .build();
      Relay relay =
          Relay.builder(db.dataSource())
              .schema(db.schema())
              .pollInterval(Duration.ofMillis(100))
              .handle(
                  Shop.ACK_KIND,
                  dev.relay.KindPolicy.DEFAULT.withBackoff(
                      Duration.ofMillis(10), Duration.ofMillis(50)),
                  http)
              .build();
      relay.start();
      try {
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    "done"
                        .equals(
                            db.queryString(
                                "SELECT state FROM {schema}.work"
                                    + " WHERE work_id = 'order-103-ack'")));
      } finally {
        relay.close();
      }

      assertThat(
              db.queryString(
                  "SELECT outcome || ' ' || receiver_ref || ' ' || attempts FROM {schema}.work"))
          .isEqualTo("delivered mailer-1 2");
      assertThat(mailer.emailsSent()).isEqualTo(1);
      assertThat(mailer.deliveries()).isEqualTo(2);
    }
  }
}
