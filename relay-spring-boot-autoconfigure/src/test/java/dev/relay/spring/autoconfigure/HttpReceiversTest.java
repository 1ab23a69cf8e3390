package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.relay.receiver.http.HttpReply;
import dev.relay.spring.RelayHttpReceivers;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.PreparedStatement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/** A Spring MVC controller answering Relay's HTTP deliveries through {@link RelayHttpReceivers}. */
@RelayDatabaseTest
class HttpReceiversTest {
  private static ApplicationContextRunner on(TestDatabase db) {
    return Contexts.on(db)
        .withConfiguration(AutoConfigurations.of(RelayWebAutoConfiguration.class));
  }

  @RestController
  static class MailController {
    final RelayHttpReceivers receivers;
    final String insert;
    final AtomicInteger effects = new AtomicInteger();
    volatile CountDownLatch entered = new CountDownLatch(0);
    volatile CountDownLatch release = new CountDownLatch(0);

    MailController(RelayHttpReceivers receivers, String schema) {
      this.receivers = receivers;
      this.insert = "INSERT INTO " + schema + ".mail VALUES (?)";
    }

    @PostMapping("/mail")
    ResponseEntity<String> receive(@RequestHeader HttpHeaders headers, @RequestBody String body) {
      return receivers.handle(
          "mailer",
          headers,
          body,
          (connection, delivery) -> {
            try (PreparedStatement ps = connection.prepareStatement(insert)) {
              ps.setString(1, delivery.messageId());
              ps.executeUpdate();
            }
            effects.incrementAndGet();
            entered.countDown();
            release.await(30, TimeUnit.SECONDS);
            return HttpReply.json(200, "{\"queued\":\"" + delivery.messageId() + "\"}");
          });
    }
  }

  private static MockHttpServletRequestBuilder delivery(String key, String body) {
    return post("/mail")
        .contentType(MediaType.APPLICATION_JSON)
        .header("Idempotency-Key", key)
        .content(body);
  }

  @Test
  void appliedOnceRepeatReplayedChangedBodyStaleTokenAndInProgressAreAnswered(TestDatabase db)
      throws Exception {
    db.execute("CREATE TABLE {schema}.mail (message_id text PRIMARY KEY)");
    on(db)
        .run(
            context -> {
              MailController mailer =
                  new MailController(context.getBean(RelayHttpReceivers.class), db.schema());
              MockMvc mvc = MockMvcBuilders.standaloneSetup(mailer).build();
              String ack = "{\"order\":\"103\",\"email\":\"mina@example.com\"}";

              mvc.perform(delivery("order-103-ack", ack))
                  .andExpect(status().isOk())
                  .andExpect(content().string("{\"queued\":\"order-103-ack\"}"));
              mvc.perform(delivery("order-103-ack", ack))
                  .andExpect(status().isOk())
                  .andExpect(header().string("Idempotent-Replayed", "true"))
                  .andExpect(content().string("{\"queued\":\"order-103-ack\"}"));
              mvc.perform(delivery("order-103-ack", "{\"order\":\"104\"}"))
                  .andExpect(status().isUnprocessableContent());
              mvc.perform(post("/mail").contentType(MediaType.APPLICATION_JSON).content(ack))
                  .andExpect(status().isBadRequest());
              assertThat(mailer.effects).hasValue(1);

              // Fencing: token 7 of Mina's mailbox is accepted, then an older token 6 is stale.
              mvc.perform(
                      delivery("order-105-ack", "{\"order\":\"105\"}")
                          .header("Relay-Fencing-Resource", "mailbox-mina")
                          .header("Relay-Fencing-Token", "7"))
                  .andExpect(status().isOk());
              mvc.perform(
                      delivery("order-106-ack", "{\"order\":\"106\"}")
                          .header("Relay-Fencing-Resource", "mailbox-mina")
                          .header("Relay-Fencing-Token", "6"))
                  .andExpect(status().isPreconditionFailed());
              assertThat(mailer.effects).hasValue(2);

              // While one delivery of order-107-ack is being applied, a second one gets 409.
              mailer.entered = new CountDownLatch(1);
              mailer.release = new CountDownLatch(1);
              CompletableFuture<Integer> first =
                  CompletableFuture.supplyAsync(
                      () -> {
                        try {
                          return mvc.perform(delivery("order-107-ack", "{\"order\":\"107\"}"))
                              .andReturn()
                              .getResponse()
                              .getStatus();
                        } catch (Exception e) {
                          throw new IllegalStateException(e);
                        }
                      });
              assertThat(mailer.entered.await(30, TimeUnit.SECONDS)).isTrue();
              mvc.perform(delivery("order-107-ack", "{\"order\":\"107\"}"))
                  .andExpect(status().isConflict())
                  .andExpect(header().exists("Retry-After"));
              mailer.release.countDown();
              assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(200);

              assertThat(db.queryLong("SELECT count(*) FROM {schema}.mail")).isEqualTo(3);
              assertThat(mailer.effects).hasValue(3);
            });
  }

  @Test
  void refusedInsideASpringTransaction(TestDatabase db) {
    on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayHttpReceivers receivers = context.getBean(RelayHttpReceivers.class);
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(DataSourceTransactionManager.class));
              HttpHeaders headers = new HttpHeaders();
              headers.add("Idempotency-Key", "order-103-ack");
              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s ->
                                  receivers.handle(
                                      "mailer",
                                      headers,
                                      "{}",
                                      (c, d) -> HttpReply.json(200, "{}"))))
                  .isInstanceOf(IllegalStateException.class)
                  .hasMessageContaining("InboxTemplate");
            });
  }
}
