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

  private Connection worker() throws Exception {
    Connection c = db.connection();
    try (Statement s = c.createStatement()) {
      s.execute("SET lock_timeout = '2s'");
    }
    return c;
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
        Connection c = worker()) {
      assertThat(claims.claimNext(c, "w1", "default", "charge", LEASE))
          .hasValueSatisfying(h -> assertThat(h.workId()).isEqualTo("order-103-charge"));
      producer.rollback();
    }
  }

  @Test
  void theWorkerRenewsAndSettlesWhileTheProducerNamingItsWorkIsOpen() throws Exception {
    try (Connection c = worker()) {
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
    try (Connection c = worker()) {
      HeldClaim charge = claims.claimNext(c, "w1", "default", "charge", LEASE).orElseThrow();
      claims.settle(c, charge, Outcome.done("ch_1"));
    }
    try (Connection producer = producerNamingTheCharge()) {
      try (Connection other = worker();
          Statement s = other.createStatement()) {
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
