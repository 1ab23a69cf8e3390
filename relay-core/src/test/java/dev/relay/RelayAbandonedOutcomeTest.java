package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Bug 5 of issue 13: an outcome that a worker gives up because its lease passed while PostgreSQL
 * could not be reached leaves a trace: a listener event when it is given up, and, once PostgreSQL
 * can be reached again, a row in the attempt history (ending {@code abandoned}) with the outcome
 * and the receiver's reference. Before the fix it was only logged.
 *
 * <p>Relay's connections go through a {@link LoopbackProxy} with one-second connect, login and
 * socket timeouts; the handler of generation 1 stalls the proxy (a network partition) before it
 * returns done, so the completer cannot record it before the 3 s lease passes.
 */
@RelayDatabaseTest
class RelayAbandonedOutcomeTest {
  @Test
  void outcomeGivenUpWhileUnreachableIsReportedAndKeptInTheHistoryOnReconnection(TestDatabase db)
      throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setURL(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      ds.setConnectTimeout(1);
      ds.setLoginTimeout(1);
      ds.setSocketTimeout(1);
      Events events = new Events();
      f.enqueue(Work.of("w", "k", "{}"));
      f.start(
          f.builder(ds)
              .notifications(false)
              .lease(Duration.ofSeconds(3))
              .renewInterval(Duration.ofSeconds(1))
              .concurrency(1)
              .listener(events)
              .handle(
                  "k",
                  claim -> {
                    if (claim.generation() == 1) {
                      proxy.stall(true); // PostgreSQL is unreachable from here on
                    }
                    return Outcome.done("ref-" + claim.workId() + "-" + claim.generation());
                  }));

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> events.all.contains("abandoned w 1 complete"));
      proxy.stall(false);

      await().atMost(RelayFixture.PATIENCE).until(() -> !abandonedRows(f).isEmpty());
      assertThat(abandonedRows(f)).containsExactly("1 complete delivered ref-w-1");
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(f.row("w"))
          .containsEntry("claim_generation", "2")
          .containsEntry("receiver_ref", "ref-w-2");
      assertThat(events.all).containsOnlyOnce("abandoned w 1 complete");
    }
  }

  /**
   * The attempt history's abandoned rows of {@code w}: "generation action outcome receiver_ref".
   */
  private static List<String> abandonedRows(RelayFixture f) {
    return f.attempts(
        "w", "ending = 'abandoned'", "generation", "action", "outcome", "receiver_ref");
  }

  private static final class Events implements RelayEventListener {
    final List<String> all = new CopyOnWriteArrayList<>();

    @Override
    public void abandoned(Claim claim, String operation) {
      all.add("abandoned " + claim.workId() + " " + claim.generation() + " " + operation);
    }
  }
}
