package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.spring.RelayHandler;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@RelayDatabaseTest
class HandlersTest {
  record OrderReceived(String orderId, int quantity) {}

  /** A bean with a typed handler method. */
  static class Mailer {
    final List<OrderReceived> received = new CopyOnWriteArrayList<>();

    @RelayHandler(kind = "order_received")
    Outcome on(OrderReceived message, Claim claim) {
      received.add(message);
      return Outcome.done("mail-" + claim.workId());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Handlers {
    @Bean
    Mailer mailer() {
      return new Mailer();
    }

    @Bean
    @RelayHandler(kind = "raw_ping")
    Handler rawPing() {
      return claim -> Outcome.done(claim.payload());
    }

    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  private static void enqueue(TestDatabase db, Work... works) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox.builder().schema(db.schema()).build().enqueueAll(c, List.of(works));
      c.commit();
    }
  }

  private static String state(TestDatabase db, String workId) throws Exception {
    return db.queryString("SELECT state FROM {schema}.work WHERE work_id = '" + workId + "'");
  }

  @Test
  void typedMethodAndHandlerBeanRunAndAnUnreadablePayloadFailsWithEvidence(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Handlers.class)
        .run(
            context -> {
              enqueue(
                  db,
                  Work.of(
                      "order-103-ack", "order_received", "{\"orderId\":\"103\",\"quantity\":2}"),
                  Work.of(
                      "order-104-ack",
                      "order_received",
                      "{\"orderId\":\"104\",\"quantity\":\"two\"}"),
                  Work.of("ping-1", "raw_ping", "{\"n\":1}"));

              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(
                      () -> {
                        assertThat(state(db, "order-103-ack")).isEqualTo("done");
                        assertThat(state(db, "order-104-ack")).isEqualTo("failed");
                        assertThat(state(db, "ping-1")).isEqualTo("done");
                      });
              assertThat(context.getBean(Mailer.class).received)
                  .containsExactly(new OrderReceived("103", 2));
              // as docs/spring.md says: the kind apart, the error from the type's name on
              assertThat(
                      db.queryString(
                          "SELECT last_error_kind FROM {schema}.work"
                              + " WHERE work_id = 'order-104-ack'"))
                  .isEqualTo("permanent");
              assertThat(
                      db.queryString(
                          "SELECT last_error FROM {schema}.work WHERE work_id = 'order-104-ack'"))
                  .startsWith(
                      "unreadable payload: cannot read it as " + OrderReceived.class.getName())
                  .contains("quantity");
              assertThat(
                      db.queryLong(
                          "SELECT attempts FROM {schema}.work WHERE work_id = 'order-104-ack'"))
                  .isEqualTo(1);
              MeterRegistry registry = context.getBean(MeterRegistry.class);
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(
                      () -> assertThat(registry.find("relay.completions").counters()).isNotEmpty());
            });
  }

  /** A handler whose call fails in a way that says nothing about the effect. */
  static class FlakyGateway {
    @RelayHandler(kind = "charge")
    Outcome on(OrderReceived order) {
      throw new IllegalStateException("gateway reset the connection");
    }
  }

  @Test
  void aThrowingHandlerIsAnUnknownOutcomeUnderTheKindsPolicyFromProperties(TestDatabase db) {
    Contexts.on(db)
        .withBean(FlakyGateway.class, FlakyGateway::new)
        .withPropertyValues("relay.kinds.charge.unknown-outcome=park")
        .run(
            context -> {
              enqueue(db, Work.of("charge-103", "charge", "{\"orderId\":\"103\",\"quantity\":1}"));
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(() -> assertThat(state(db, "charge-103")).isEqualTo("failed"));
              assertThat(
                      db.queryString(
                          "SELECT outcome || ' ' || last_error FROM {schema}.work"
                              + " WHERE work_id = 'charge-103'"))
                  .startsWith("unknown")
                  .contains("gateway reset the connection");
            });
  }

  @Configuration(proxyBeanMethods = false)
  static class SlowHandler {
    @Bean
    @RelayHandler(kind = "slow")
    Handler slow() {
      return claim -> {
        Thread.sleep(Duration.ofMinutes(1).toMillis()); // interrupted when the grace ends
        return Outcome.done();
      };
    }
  }

  @Test
  void gracefulShutdownWithWorkInFlightLeavesItClaimableAgain(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(SlowHandler.class)
        .run(
            context -> {
              enqueue(db, Work.of("slow-1", "slow", "{}"));
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(() -> assertThat(state(db, "slow-1")).isEqualTo("running"));

              context.close(); // shutdown grace 2 s, phase timeout 10 s

              assertThat(state(db, "slow-1")).isEqualTo("ready");
              assertThat(
                      db.queryLong(
                          "SELECT count(*) FROM {schema}.work"
                              + " WHERE work_id = 'slow-1' AND claimed_by IS NULL"))
                  .isEqualTo(1);
            });
  }
}
