package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A producer that names live work as a dependency, its transaction still open, holds nothing the
 * worker of that work needs (schema version 28). Before, the enqueue locked the dependency FOR KEY
 * SHARE until the producer committed: the claim skipped it, and the worker's renewal and settle
 * waited until their lock timeout, so a producer holding on longer than a lease made the work run
 * twice. Each step runs under a 2-second lock timeout: a wait for the producer's lock fails it.
 */
@RelayDatabaseTest
class DependencyLockTest {
  private static final Duration LEASE = Duration.ofMinutes(1);

  private TestDatabase db;
  private Outbox outbox;
  private ManualClaims claims;

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    this.outbox = Outbox.builder().schema(db.schema()).build();
    this.claims = ManualClaims.forSchema(db.schema());
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("order-103-charge", "charge", "{}"));
      c.commit();
    }
  }

  /**
   * A worker's connection with a 2-second lock timeout, reset when closed: the test kit's pool
   * hands the connection to the next test, which must not inherit it.
   */
  private final class Worker implements AutoCloseable {
    final Connection c;

    Worker() throws Exception {
      c = db.connection();
      try (Statement s = c.createStatement()) {
        s.execute("SET lock_timeout = '2s'");
      }
    }

    @Override
    public void close() throws java.sql.SQLException {
      try (Statement s = c.createStatement()) {
        s.execute("RESET lock_timeout");
      } finally {
        c.close();
      }
    }
  }

  /** Opens a producer's transaction that names the charge as a dependency, left open. */
  private Connection producerNamingTheCharge() throws Exception {
    Connection producer = db.connection();
    producer.setAutoCommit(false);
    outbox.enqueue(producer, Work.of("order-103-ship", "ship", "{}").dependsOn("order-103-charge"));
    return producer;
  }

  @Test
  void aReadyDependencyIsClaimedWhileTheProducerNamingItIsOpen() throws Exception {
    try (Connection producer = producerNamingTheCharge();
        Worker w = new Worker()) {
      assertThat(claims.claimNext(w.c, "w1", "default", "charge", LEASE))
          .hasValueSatisfying(h -> assertThat(h.workId()).isEqualTo("order-103-charge"));
      producer.rollback();
    }
  }

  @Test
  void theWorkerRenewsAndSettlesWhileTheProducerNamingItsWorkIsOpen() throws Exception {
    try (Worker w = new Worker()) {
      Connection c = w.c;
      HeldClaim charge = claims.claimNext(c, "w1", "default", "charge", LEASE).orElseThrow();
      try (Connection producer = producerNamingTheCharge()) {
        assertThat(claims.renew(c, charge, LEASE).applied()).isTrue();
        assertThat(claims.settle(c, charge, Outcome.done("ch_1")).applied()).isTrue();
        producer.commit();
      }
      // the dependent runs once its dependency is done, as before
      List<HeldClaim> ship =
          claims.claim(c, "w1", List.of("default"), List.of("ship"), 10, LEASE).claimed();
      assertThat(ship).extracting(h -> h.workId()).containsExactly("order-103-ship");
    }
  }

  /** Finished work is still locked: a purge waits rather than remove what the producer names. */
  @Test
  void aFinishedDependencyStaysLockedUntilTheProducerEnds() throws Exception {
    try (Worker w = new Worker()) {
      HeldClaim charge = claims.claimNext(w.c, "w1", "default", "charge", LEASE).orElseThrow();
      claims.settle(w.c, charge, Outcome.done("ch_1"));
    }
    try (Connection producer = producerNamingTheCharge()) {
      try (Worker other = new Worker();
          Statement s = other.c.createStatement()) {
        // FOR UPDATE conflicts with the producer's FOR KEY SHARE: refused at the lock timeout
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () ->
                    s.executeQuery(
                        "SELECT 1 FROM "
                            + db.schema()
                            + ".work_history WHERE work_id = 'order-103-charge' FOR UPDATE NOWAIT"))
            .hasMessageContaining("could not obtain lock");
      }
      producer.rollback();
    }
  }
}
