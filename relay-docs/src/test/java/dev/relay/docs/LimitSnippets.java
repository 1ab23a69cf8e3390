package dev.relay.docs;

import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;

/** The code of docs/limits.md. */
final class LimitSnippets {
  private LimitSnippets() {}

  /** Calls the provider whose API the limits protect. */
  interface Provider {
    String send(String payload) throws Exception;
  }

  static Relay policy(DataSource dataSource, Provider provider) {
    // docs:begin limits-policy
    KindPolicy webhook = KindPolicy.DEFAULT
        .withMaxRunning(8)                              // 8 live claims across every worker
        .withMaxRunningPerGroup(2)                      // 2 per customer
        .withRateLimit(50, Duration.ofSeconds(1));      // 50 claims in any second: half a 100/s quota
    Relay relay = Relay.builder(dataSource)
        .handle("webhook", webhook, claim -> Outcome.done(provider.send(claim.payload())))
        .build();
    relay.start();   // writes the limits to the limiter table, then claims within them
    // docs:end
    return relay;
  }

  static void group(Connection c, Outbox outbox, String json) {
    // docs:begin limits-group
    outbox.enqueue(c, Work.of("hook-8812", "webhook", json)
        .group("customer-42"));      // counts against customer-42's per-group limit
    // docs:end
  }
}
