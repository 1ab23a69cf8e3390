package dev.relay.transport.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.InvalidConfigurationException;
import dev.relay.Milestone;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import dev.relay.examples.shop.LoopbackMailer;
import dev.relay.examples.shop.Shop;
import dev.relay.receiver.FenceTokens;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.StringReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class HttpTransportTest {
  private static final String KIND = "order_received";
  private static final String ACK = Shop.ackPayload(103, 1, "29.00");

  private static HttpTransport transport(HttpRoute route) {
    return HttpTransport.builder().route(route).build();
  }

  private static Outcome deliver(ScriptedServer s, int status, String body, Map<String, String> h)
      throws Exception {
    s.answer(status, body, h);
    return transport(HttpRoute.of(KIND, s.uri()).withReceiverRefField("id"))
        .handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
  }

  @Nested
  class RepliesFromAScriptedReceiver {
    @Test
    void twoHundredIsDoneWithTheReferenceFromTheJsonField() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 202, "{\"id\":\"mail-7731\",\"queued\":true}", Map.of());

        assertThat(o).isInstanceOf(Outcome.Done.class);
        Outcome.Done d = (Outcome.Done) o;
        assertThat(d.receiverRef()).isEqualTo("mail-7731");
        assertThat(d.resultJson()).contains("queued");
        assertThat(d.milestone()).isEqualTo(Milestone.ACCEPTED);
      }
    }

    @Test
    void referenceFromAConfiguredHeaderAndTheRoutesMilestone() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.answer(200, "", Map.of("X-Message-Id", "m-1"));
        Outcome o =
            transport(
                    HttpRoute.of(KIND, s.uri())
                        .withReceiverRefHeader("X-Message-Id")
                        .withMilestone(Milestone.QUEUED))
                .handle(TestClaim.of("order-103-ack", KIND, ACK, 7));

        assertThat(o).isEqualTo(Outcome.done("m-1", null, Milestone.QUEUED));
      }
    }

    @Test
    void everyRequestCarriesKeyFencingTokenAndDeadline() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Instant deadline = Instant.parse("2099-10-22T10:16:00Z");
        transport(HttpRoute.of(KIND, s.uri()))
            .handle(TestClaim.of("order-103-ack", KIND, ACK, 8).withDeadline(deadline));

        assertThat(s.lastHeaders)
            .containsEntry("idempotency-key", "order-103-ack")
            .containsEntry("relay-fencing-resource", "order-103-ack")
            .containsEntry("relay-fencing-token", "8")
            .containsEntry("relay-deadline", "2099-10-22T10:16:00Z")
            .doesNotContainKey("relay-ordering-key");
      }
    }

    @Test
    void keyedClaimSendsItsOwnKeySequenceAndPreviousDeliveredSequence() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        transport(HttpRoute.of(KIND, s.uri()))
            .handle(TestClaim.of("order-103-ack", KIND, ACK, 1).withOrdering("order-103", 3, 1L));

        assertThat(s.lastHeaders)
            .containsEntry("relay-ordering-key", "order-103")
            .containsEntry("relay-sequence", "3")
            .containsEntry("relay-previous-sequence", "1");
      }
    }

    @Test
    void orderingHookAddsTheOrderingHeaders() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        HttpTransport.builder()
            .route(HttpRoute.of(KIND, s.uri()).withFencing(HttpRoute.Fencing.NONE))
            .ordering(c -> Optional.of(new HttpTransport.Ordering("order-103", 3, 2L)))
            .build()
            .handle(TestClaim.of("order-103-ack", KIND, ACK, 1));

        assertThat(s.lastHeaders)
            .containsEntry("relay-ordering-key", "order-103")
            .containsEntry("relay-sequence", "3")
            .containsEntry("relay-previous-sequence", "2")
            .doesNotContainKey("relay-fencing-token");
      }
    }

    @Test
    void badRequestAndUnprocessableFailPermanentlyWithTheBodyAsEvidence() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        for (int status : new int[] {400, 422}) {
          Outcome o = deliver(s, status, "payload refused: total missing", Map.of());

          assertThat(o).isInstanceOf(Outcome.Fail.class);
          assertThat(((Outcome.Fail) o).reason())
              .contains("HTTP " + status)
              .contains("payload refused: total missing");
          assertThat(((Outcome.Fail) o).effect()).isEqualTo(Effect.NOT_DELIVERED);
        }
      }
    }

    @Test
    void serverErrorIsRetriedWithUnknownEffect() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 500, "boom", Map.of());

        assertThat(o).isEqualTo(Outcome.retry("HTTP 500: boom", Effect.UNKNOWN));
      }
    }

    @Test
    void conflictIsRetriedLaterWithUnknownEffect() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 409, "in progress", Map.of("Retry-After", "2"));

        assertThat(o)
            .isEqualTo(
                Outcome.retry("HTTP 409: in progress", Effect.UNKNOWN)
                    .after(Duration.ofSeconds(2)));
      }
    }

    @Test
    void tooManyRequestsWithRetryAfterSecondsSnoozes() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 429, "slow down", Map.of("Retry-After", "7"));

        assertThat(o)
            .isEqualTo(
                Outcome.retryAfter(Duration.ofSeconds(7), "HTTP 429: slow down (Retry-After 7)"));
      }
    }

    @Test
    void tooManyRequestsWithRetryAfterAsAnHttpDateSnoozesUntilThen() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 429, "quota", Map.of("Retry-After", httpDateInTwoMinutes()));

        assertThat(o).isInstanceOf(Outcome.Snooze.class);
        assertThat(((Outcome.Snooze) o).delay())
            .isBetween(Duration.ofSeconds(100), Duration.ofSeconds(121));
      }
    }

    @Test
    void tooManyRequestsWithoutRetryAfterIsAnOrdinaryRetry() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 429, "slow down", Map.of("Retry-After", "soon"));

        assertThat(o).isEqualTo(Outcome.retry("HTTP 429: slow down", Effect.NOT_DELIVERED));
      }
    }

    @Test
    void unavailableHonoursRetryAfterButNeverSnoozes() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 503, "maintenance", Map.of("Retry-After", httpDateInTwoMinutes()));

        assertThat(o).isInstanceOf(Outcome.Retry.class);
        Outcome.Retry r = (Outcome.Retry) o;
        assertThat(r.effect()).isEqualTo(Effect.UNKNOWN);
        assertThat(r.delay()).isBetween(Duration.ofSeconds(100), Duration.ofSeconds(121));
      }
    }

    private static String httpDateInTwoMinutes() {
      return DateTimeFormatter.RFC_1123_DATE_TIME.format(
          ZonedDateTime.now(ZoneOffset.UTC).plusSeconds(120));
    }

    @Test
    void staleFencingTokenFailsAsNotDelivered() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        Outcome o = deliver(s, 412, "stale fencing token 7", Map.of());

        assertThat(o)
            .isEqualTo(Outcome.fail("HTTP 412: stale fencing token 7", Effect.NOT_DELIVERED));
      }
    }

    @Test
    void requestTimeoutAfterSendingIsUnknownAndStaysInsideTheRunTime() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.hold = true;
        long start = System.nanoTime();
        Outcome o =
            transport(HttpRoute.of(KIND, s.uri()))
                .handle(
                    TestClaim.of("order-103-ack", KIND, ACK, 7)
                        .withRunTime(Duration.ofMillis(800)));

        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.UNKNOWN);
        // The route allows 10 s, the run time only 0.8 s: the call gave up inside the run time.
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      }
    }

    @Test
    void sentAsynchronouslyTheReplyGivesTheSameOutcome() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.answer(202, "{\"id\":\"mail-7731\"}", Map.of());
        HttpTransport t = transport(HttpRoute.of(KIND, s.uri()).withReceiverRefField("id"));
        Outcome o =
            t.handleAsync(TestClaim.of("order-103-ack", KIND, ACK, 7)).get(30, TimeUnit.SECONDS);

        assertThat(o).isInstanceOf(Outcome.Done.class);
        assertThat(((Outcome.Done) o).receiverRef()).isEqualTo("mail-7731");
        assertThat(s.lastHeaders).containsEntry("idempotency-key", "order-103-ack");

        s.answer(503, "busy", Map.of());
        Outcome busy =
            t.handleAsync(TestClaim.of("order-103-ack", KIND, ACK, 8)).get(30, TimeUnit.SECONDS);
        assertThat(busy).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) busy).effect()).isEqualTo(Effect.UNKNOWN);
      }
    }

    @Test
    void sentAsynchronouslyARequestTimeoutIsUnknownAndARefusedConnectionNotDelivered()
        throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.hold = true;
        Outcome o =
            transport(HttpRoute.of(KIND, s.uri()))
                .handleAsync(
                    TestClaim.of("order-103-ack", KIND, ACK, 7).withRunTime(Duration.ofMillis(800)))
                .get(30, TimeUnit.SECONDS);
        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.UNKNOWN);
      }
      int closed;
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        closed = socket.getLocalPort();
      }
      Outcome refused =
          transport(HttpRoute.of(KIND, URI.create("http://127.0.0.1:" + closed + "/deliver")))
              .handleAsync(TestClaim.of("order-103-ack", KIND, ACK, 7))
              .get(30, TimeUnit.SECONDS);
      assertThat(refused).isInstanceOf(Outcome.Retry.class);
      assertThat(((Outcome.Retry) refused).effect()).isEqualTo(Effect.NOT_DELIVERED);
    }

    @Test
    void cancellingTheAsynchronousStageEndsTheAttemptAtOnce() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.hold = true;
        CompletableFuture<Outcome> stage =
            transport(HttpRoute.of(KIND, s.uri()))
                .handleAsync(
                    TestClaim.of("order-103-ack", KIND, ACK, 7)
                        .withRunTime(Duration.ofSeconds(60)));
        await().atMost(Duration.ofSeconds(30)).until(() -> !s.lastHeaders.isEmpty());

        // The JDK's future passes the cancel to the exchange; the stage then ends at once, either
        // cancelled or with an outcome whose effect is unknown.
        stage.cancel(true);
        await().atMost(Duration.ofSeconds(30)).until(stage::isDone);
        if (!stage.isCancelled()) {
          Outcome o = stage.join();
          assertThat(o).isInstanceOf(Outcome.Retry.class);
          assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.UNKNOWN);
        }
      }
    }

    @Test
    void requestTimeoutStaysBeforeTheBusinessDeadline() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.hold = true;
        long start = System.nanoTime();
        Outcome o =
            transport(HttpRoute.of(KIND, s.uri()))
                .handle(
                    TestClaim.of("order-103-ack", KIND, ACK, 7)
                        .withDeadline(Instant.now().plusMillis(800)));

        assertThat(o).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.UNKNOWN);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      }
    }

    @Test
    void aSlowReplyMayOutlastTheLeaseWhileTheRunTimeLasts() throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        s.hold = true;
        // The lease (renewed by the runtime while the handler runs) is nearly over; the run time
        // is not: the call must not be cut off at the lease.
        TestClaim claim =
            TestClaim.of("order-103-ack", KIND, ACK, 7)
                .withLease(Duration.ofMillis(300))
                .withRunTime(Duration.ofSeconds(30));
        CompletableFuture<Outcome> call =
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return transport(HttpRoute.of(KIND, s.uri())).handle(claim);
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                });
        await().atMost(Duration.ofSeconds(30)).until(() -> !s.lastHeaders.isEmpty());
        await().atMost(Duration.ofSeconds(30)).until(() -> claim.leaseRemaining().isZero());
        assertThat(call).isNotDone();
        s.release.countDown();

        assertThat(call.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Done.class);
      }
    }
  }

  @Test
  void refusedConnectionIsRetriedAsNotDelivered() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }
    Outcome o =
        transport(HttpRoute.of(KIND, URI.create("http://127.0.0.1:" + port + "/mail")))
            .handle(TestClaim.of("order-103-ack", KIND, ACK, 7));

    assertThat(o).isInstanceOf(Outcome.Retry.class);
    assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.NOT_DELIVERED);
  }

  @Test
  void runTimeAlreadyOverSendsNothing() throws Exception {
    Outcome o =
        transport(HttpRoute.of(KIND, URI.create("http://127.0.0.1:9/mail")))
            .handle(TestClaim.of("order-103-ack", KIND, ACK, 7).withRunTime(Duration.ZERO));

    assertThat(o).isInstanceOf(Outcome.Retry.class);
    assertThat(((Outcome.Retry) o).effect()).isEqualTo(Effect.NOT_DELIVERED);
  }

  @Nested
  class AgainstTheLoopbackMailer {
    private Shop shop;

    @BeforeEach
    void install(TestDatabase db) throws Exception {
      shop = Shop.create(db.schema() + "_shop", db.schema());
      db.execute("DROP SCHEMA IF EXISTS " + shop.schema() + " CASCADE");
      shop.install(db.dataSource());
    }

    private HttpTransport mailTransport(LoopbackMailer m) {
      return transport(HttpRoute.of(KIND, m.mailUri()).withReceiverRefField("email_id"));
    }

    @Test
    void acceptedThenDroppedConnectionIsUnknownAndTheRepeatIsAbsorbed(TestDatabase db)
        throws Exception {
      try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
        m.dropNextReply();

        Outcome first = mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
        Outcome repeat = mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 8));

        assertThat(first).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) first).effect()).isEqualTo(Effect.UNKNOWN);
        assertThat(repeat).isInstanceOf(Outcome.Done.class);
        assertThat(((Outcome.Done) repeat).receiverRef()).isEqualTo("mailer-1");
        assertThat(m.emailsSent()).isEqualTo(1);
        assertThat(m.deliveries()).isEqualTo(2);
      }
    }

    @Test
    void withoutDeduplicationTheSameRepeatSendsTwice(TestDatabase db) throws Exception {
      try (LoopbackMailer m =
          LoopbackMailer.builder(db.dataSource(), shop, db.schema())
              .name("plain")
              .deduplicate(false)
              .start()) {
        m.dropNextReply();
        mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
        mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 8));

        assertThat(m.emailsSent()).isEqualTo(2);
      }
    }

    @Test
    void concurrentSameKeyGets409AndIsRetriedLater(TestDatabase db) throws Exception {
      try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
        CountDownLatch[] gate = m.holdNextEmail();
        CompletableFuture<Outcome> first =
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                });
        assertThat(gate[0].await(30, TimeUnit.SECONDS)).isTrue();

        Outcome concurrent = mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 8));
        gate[1].countDown();

        assertThat(concurrent).isInstanceOf(Outcome.Retry.class);
        assertThat(((Outcome.Retry) concurrent).effect()).isEqualTo(Effect.UNKNOWN);
        assertThat(((Outcome.Retry) concurrent).delay()).isEqualTo(Duration.ofSeconds(1));
        assertThat(first.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Done.class);
        assertThat(m.emailsSent()).isEqualTo(1);
      }
    }

    @Test
    void changedPayloadUnderAUsedKeyFailsWith422(TestDatabase db) throws Exception {
      try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
        mailTransport(m).handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
        Outcome changed =
            mailTransport(m)
                .handle(TestClaim.of("order-103-ack", KIND, ACK.replace("29.00", "31.00"), 8));

        assertThat(changed).isInstanceOf(Outcome.Fail.class);
        assertThat(((Outcome.Fail) changed).reason()).startsWith("HTTP 422");
      }
    }

    @Test
    void fencedResourceRefusesTheDelayedLowerGeneration(TestDatabase db) throws Exception {
      try (LoopbackMailer m = LoopbackMailer.builder(db.dataSource(), shop, db.schema()).start()) {
        HttpTransport fenced = transport(HttpRoute.of(KIND, m.fencedUri()));

        Outcome b = fenced.handle(TestClaim.of("order-103-ack", KIND, ACK, 8));
        Outcome a = fenced.handle(TestClaim.of("order-103-ack", KIND, ACK, 7));

        assertThat(b).isInstanceOf(Outcome.Done.class);
        assertThat(a).isInstanceOf(Outcome.Fail.class);
        assertThat(((Outcome.Fail) a).reason())
            .contains("HTTP 412")
            .contains("stale fencing token 7");
      }
    }

    @Test
    void resourceTokensComeFromTheResourcesOwnCounter(TestDatabase db) throws Exception {
      try (ScriptedServer s = new ScriptedServer()) {
        HttpTransport t =
            HttpTransport.builder()
                .route(HttpRoute.of(KIND, s.uri()).withFencing(HttpRoute.Fencing.RESOURCE))
                .fenceTokens(db.dataSource(), FenceTokens.forSchema(db.schema()), c -> "mailbox-1")
                .build();

        t.handle(TestClaim.of("order-103-ack", KIND, ACK, 7));
        String first = s.lastHeaders.get("relay-fencing-token");
        t.handle(TestClaim.of("order-104-ack", KIND, ACK, 1));

        assertThat(s.lastHeaders).containsEntry("relay-fencing-resource", "mailbox-1");
        assertThat(Long.parseLong(s.lastHeaders.get("relay-fencing-token")))
            .isGreaterThan(Long.parseLong(first));
      }
    }
  }

  @Nested
  class Configuration {
    @Test
    void routesAreReadFromProperties() throws Exception {
      Properties p = new Properties();
      p.load(
          new StringReader(
              "http.order_received.url = http://127.0.0.1:8081/mail\n"
                  + "http.order_received.request-timeout = PT3S\n"
                  + "http.order_received.receiver-ref-field = email_id\n"
                  + "http.order_received.milestone = queued\n"
                  + "http.order_received.fencing = none\n"
                  + "unrelated.key = 1\n"));

      List<HttpRoute> routes = HttpRoutes.fromProperties(p);

      assertThat(routes)
          .containsExactly(
              HttpRoute.of(KIND, URI.create("http://127.0.0.1:8081/mail"))
                  .withTimeouts(HttpRoute.DEFAULT_CONNECT_TIMEOUT, Duration.ofSeconds(3))
                  .withReceiverRefField("email_id")
                  .withMilestone(Milestone.QUEUED)
                  .withFencing(HttpRoute.Fencing.NONE));
    }

    @Test
    void typosAndBadValuesAreRefusedNamingTheKey() {
      Properties typo = new Properties();
      typo.setProperty("http.order_received.urll", "http://x");
      Properties bad = new Properties();
      bad.setProperty("http.k.url", "http://127.0.0.1/x");
      bad.setProperty("http.k.connect-timeout", "2s");

      assertThatThrownBy(() -> HttpRoutes.fromProperties(typo))
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("http.order_received.urll");
      assertThatThrownBy(() -> HttpRoutes.fromProperties(bad))
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("http.k.connect-timeout");
    }

    @Test
    void resourceFencingNeedsATokenSource() {
      assertThatThrownBy(
              () ->
                  HttpTransport.builder()
                      .route(
                          HttpRoute.of(KIND, URI.create("http://127.0.0.1:1/x"))
                              .withFencing(HttpRoute.Fencing.RESOURCE))
                      .build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("fenceTokens");
    }
  }
}
