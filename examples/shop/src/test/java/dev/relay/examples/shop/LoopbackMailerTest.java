package dev.relay.examples.shop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class LoopbackMailerTest {
  private static final String ACK = Shop.ackPayload(103, 1, "29.00");
  private final HttpClient http = HttpClient.newHttpClient();
  private Shop shop;

  @BeforeEach
  void install(TestDatabase db) throws Exception {
    shop = Shop.create(db.schema() + "_shop", db.schema());
    db.execute("DROP SCHEMA IF EXISTS " + shop.schema() + " CASCADE");
    shop.install(db.dataSource());
  }

  private HttpResponse<String> post(java.net.URI uri, String key, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(uri)
            .header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void deduplicatingMailerSendsOneEmailAndReplaysItsReply(TestDatabase db) throws Exception {
    try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
      HttpResponse<String> first = post(m.mailUri(), "order-103-ack", ACK);
      HttpResponse<String> again = post(m.mailUri(), "order-103-ack", ACK);

      assertThat(first.statusCode()).isEqualTo(202);
      assertThat(first.body()).contains("mina@example.test");
      assertThat(again.body()).isEqualTo(first.body());
      assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(m.emailsSent()).isEqualTo(1);
      assertThat(post(m.mailUri(), "order-103-ack", ACK.replace("29.00", "31.00")).statusCode())
          .isEqualTo(422);
    }
  }

  @Test
  void mailerWithoutDeduplicationSendsTwice(TestDatabase db) throws Exception {
    try (LoopbackMailer m =
        LoopbackMailer.builder(db.dataSource(), shop, db.schema())
            .name("plain-mailer")
            .deduplicate(false)
            .start()) {
      post(m.mailUri(), "order-103-ack", ACK);
      post(m.mailUri(), "order-103-ack", ACK);

      assertThat(m.emailsSent()).isEqualTo(2);
    }
  }

  @Test
  void sameKeyWhileTheFirstIsInProgressGets409(TestDatabase db) throws Exception {
    try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
      CountDownLatch[] gate = m.holdNextEmail();
      CompletableFuture<HttpResponse<String>> first =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return post(m.mailUri(), "order-103-ack", ACK);
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(gate[0].await(30, TimeUnit.SECONDS)).isTrue();

      HttpResponse<String> concurrent = post(m.mailUri(), "order-103-ack", ACK);
      gate[1].countDown();

      assertThat(concurrent.statusCode()).isEqualTo(409);
      assertThat(concurrent.headers().firstValue("Retry-After")).isPresent();
      assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(202);
      assertThat(m.emailsSent()).isEqualTo(1);
    }
  }

  @Test
  void addressComesFromTheCustomerRecordAtDeliveryTime(TestDatabase db) throws Exception {
    db.execute(
        "UPDATE "
            + shop.schema()
            + ".customer SET email = 'mina@new.example' WHERE customer_id = 1");
    try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
      assertThat(post(m.mailUri(), "order-103-ack", ACK).body()).contains("mina@new.example");
    }
  }
}
