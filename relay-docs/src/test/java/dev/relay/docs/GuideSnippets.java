package dev.relay.docs;

import dev.relay.AsyncHandler;
import dev.relay.CancelResult;
import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.KindPolicy;
import dev.relay.Milestone;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/** The code of docs/guide.md. */
final class GuideSnippets {
  private GuideSnippets() {}

  /** A mail service's reply. */
  interface Receipt {
    String messageId();
  }

  /** A mail service that takes an idempotency key. */
  interface Mailer {
    Receipt send(String idempotencyKey, String payload);
  }

  /** Builds a monthly report: long-running work. */
  interface Reports {
    Outcome build(Claim claim) throws Exception;
  }

  static void worker(DataSource dataSource, Mailer mailer) {
    // docs:begin guide-worker
    Relay relay = Relay.builder(dataSource)
        .handle("order_received", claim -> {
          Receipt r = mailer.send(claim.workId(), claim.payload());    // work ID = idempotency key
          return Outcome.done(r.messageId(), null, Milestone.QUEUED);
        })
        .lease(Duration.ofMinutes(1))
        .build();                 // validates every setting; nothing touches the database yet
    relay.start();                // registers each kind's policy, then claims
    // ...
    relay.close();                // on shutdown (it is AutoCloseable)
    // docs:end
  }

  static Relay asyncHandler(DataSource dataSource, HttpClient http, URI webhook) {
    // docs:begin guide-async-handler
    AsyncHandler post = claim -> http.sendAsync(
            HttpRequest.newBuilder(webhook)
                .header("Idempotency-Key", claim.workId())
                .POST(HttpRequest.BodyPublishers.ofString(claim.payload()))
                .build(),
            HttpResponse.BodyHandlers.discarding())
        .thenApply(r -> r.statusCode() < 300
            ? Outcome.done()
            : Outcome.retry("status " + r.statusCode(), Outcome.Effect.UNKNOWN));
    Relay relay = Relay.builder(dataSource)
        .concurrency(1000)        // attempts in flight; each waits on the network, not a thread
        .handle("webhook", post)
        .build();
    // docs:end
    return relay;
  }

  static List<Relay> twoDatabases(DataSource shardA, DataSource shardB, Handler mail) {
    // docs:begin guide-two-databases
    Relay a = Relay.builder(shardA).handle("order_received", mail).build();
    Relay b = Relay.builder(shardB).handle("order_received", mail).build();
    a.start();                // each claims, renews and records in its own database only
    b.start();
    // ...
    b.close();
    a.close();
    // docs:end
    return List.of(a, b);
  }

  static CancelResult cancel(Relay relay) {
    // docs:begin guide-cancel
    CancelResult r = relay.cancel("order-103-ack", "mina@ops", "customer withdrew the order");
    // docs:end
    return r;
  }

  static Relay httpTransport(DataSource dataSource) {
    // docs:begin guide-http-transport
    HttpTransport http = HttpTransport.builder()
        .route(HttpRoute.of("order_received", URI.create("http://127.0.0.1:8081/mail"))
            .withReceiverRefField("email_id")           // or withReceiverRefHeader("X-Message-Id")
            .withMilestone(Milestone.QUEUED)             // what the mail service's 2xx means
            .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(10)))
        .build();
    Relay relay = Relay.builder(dataSource).handle("order_received", http).build();
    // docs:end
    return relay;
  }

  static Relay longRunning(DataSource dataSource, Reports reports) {
    // docs:begin guide-max-run-time
    Relay relay = Relay.builder(dataSource)
        .lease(Duration.ofSeconds(30))                       // a crash is noticed after ~30 s
        .handle("monthly_report",
            KindPolicy.DEFAULT.withMaxRunTime(Duration.ofHours(2)),   // default 1 h, range 1 ms-30 days
            reports::build)
        .build();
    // docs:end
    return relay;
  }
}
