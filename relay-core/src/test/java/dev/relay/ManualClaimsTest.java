package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The public manual-claim API keeps every guard of the protocol, against real PostgreSQL. */
@RelayDatabaseTest
class ManualClaimsTest {
  private static final String KIND = "k";
  private static final Duration LEASE = Duration.ofMinutes(1);

  private TestDatabase db;
  private ManualClaims claims;

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    this.claims = ManualClaims.forSchema(db.schema());
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("w1", KIND, "{\"n\": 1}"));
      c.commit();
    }
  }

  private HeldClaim claim(Connection c, String worker) {
    return claims.claimNext(c, worker, "default", KIND, LEASE).orElseThrow();
  }

  @Test
  void everyWriteOfAClaimWhoseLeaseEndedIsRefusedAndRecorded() throws Exception {
    try (Connection c = db.connection()) {
      HeldClaim a = claim(c, "a");
      assertThat(claims.expireLease(c, a).applied()).isTrue();
      HeldClaim b = claim(c, "b");

      assertThat(claims.renew(c, a, LEASE).stale()).isTrue();
      assertThat(claims.release(c, a).stale()).isTrue();
      assertThat(claims.settle(c, a, Outcome.fail("late")).stale()).isTrue();
      assertThat(claims.expireLease(c, a).stale()).isTrue();
      assertThat(claims.settle(c, b, Outcome.done("ref-b")).applied()).isTrue();

      assertThat(b.generation()).isEqualTo(a.generation() + 1);
      assertThat(b.previousOwner()).isEqualTo("a");
      assertThat(a.stopReason()).isEqualTo(Claim.StopReason.LEASE_LOST);
      assertThat(b.shouldStop()).isFalse();
    }
    assertThat(
            db.queryString(
                "SELECT state || '/' || receiver_ref FROM {schema}.work WHERE work_id = 'w1'"))
        .isEqualTo("done/ref-b");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM {schema}.attempt WHERE work_id = 'w1'"
                    + " AND generation = 1 AND ending = 'stale_write'"))
        .isPositive();
  }

  @Test
  void eachOutcomeIsWrittenAsItSays() throws Exception {
    try (Connection c = db.connection()) {
      HeldClaim first = claim(c, "a");
      claims.settle(
          c, first, Outcome.retry("busy", Outcome.Effect.NOT_DELIVERED).after(Duration.ofHours(1)));
      assertThat(claims.claimNext(c, "a", "default", KIND, LEASE)).isEmpty();
    }
    assertThat(
            db.queryString(
                "SELECT state || '/' || outcome || '/' || (available_at > clock_timestamp()"
                    + " + interval '50 minutes') FROM {schema}.work WHERE work_id = 'w1'"))
        .isEqualTo("ready/not_delivered/true");
  }

  @Test
  void aCapRetiresWorkInsteadOfClaimingIt() throws Exception {
    db.execute("UPDATE {schema}.outbox SET deadline = clock_timestamp() - interval '1 second'");
    try (Connection c = db.connection()) {
      ManualClaims.Batch batch = claims.claim(c, "a", List.of("default"), List.of(KIND), 5, LEASE);

      assertThat(batch.claimed()).isEmpty();
      assertThat(batch.retired())
          .singleElement()
          .satisfies(r -> assertThat(r.reason()).isEqualTo("deadline"));
    }
  }

  @Test
  void aConnectionInsideATransactionIsRefusedAndItsTransactionLeftAlone() throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1"); // the caller's transaction is open
      }
      assertThatThrownBy(() -> claim(c, "a"))
          .isInstanceOf(TransactionRequiredException.class)
          .hasMessageContaining("auto-commit");
      assertThat(c.getAutoCommit()).isFalse();
      c.rollback();
    }
    assertThat(db.queryString("SELECT state FROM {schema}.work")).isEqualTo("ready");
  }

  @Test
  void badArgumentsAreRefusedByName() throws Exception {
    assertThatThrownBy(() -> ManualClaims.forSchema("pg_catalog"))
        .isInstanceOf(InvalidConfigurationException.class);
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> claims.claimNext(c, "", "default", KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId");
      assertThatThrownBy(() -> claims.claim(c, "a", List.of("default"), List.of(KIND), 0, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("limit");
      HeldClaim held = claim(c, "a");
      assertThatThrownBy(() -> claims.renew(c, held, Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease");
      assertThatThrownBy(() -> claims.settle(c, held, null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("outcome");
    }
  }
}
