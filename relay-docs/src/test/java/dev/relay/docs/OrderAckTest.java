package dev.relay.docs;

// docs:begin testing-manual-worker-imports
import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Claim;
import dev.relay.HeldClaim;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import dev.relay.testkit.ManualWorker;
import java.sql.Connection;
import org.junit.jupiter.api.Test;
// docs:end

/** The manual-worker example of docs/testing.md, run as written. */
// docs:begin testing-manual-worker
@RelayDatabaseTest
class OrderAckTest {

  @Test
  void aStalledWorkersLateCompletionIsRefused(TestDatabase db) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order\": 103}"));
      c.commit();
    }
    ManualWorker a = ManualWorker.builder(db.dataSource()).schema(db.schema())
        .workerId("worker-a")
        .handle("order_received", claim -> Outcome.done("email-1"))
        .build();
    ManualWorker b = ManualWorker.builder(db.dataSource()).schema(db.schema())
        .workerId("worker-b")
        .handle("order_received", claim -> Outcome.done("email-1"))
        .build();

    HeldClaim stalled = a.claimNext("order_received").orElseThrow();  // A holds it, runs nothing
    Outcome sent = a.call(stalled).outcome();           // A's call happens; nothing is recorded
    a.expireLease(stalled);                              // A's lease ends on the database clock

    ManualWorker.Attempt taken = b.runNext("order_received").orElseThrow();
    assertThat(taken.claim().generation()).isEqualTo(stalled.generation() + 1);
    assertThat(taken.write().applied()).isTrue();        // B's done is recorded
    assertThat(a.settle(stalled, sent).stale()).isTrue(); // A's late done is refused
    assertThat(stalled.stopReason()).isEqualTo(Claim.StopReason.LEASE_LOST);
  }
}
// docs:end
