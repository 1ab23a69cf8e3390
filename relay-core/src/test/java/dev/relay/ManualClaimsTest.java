package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
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

  /**
   * A takeover marks the row's evidence unknown at once (the expired attempt may have reached the
   * receiver), and a later attempt that knows it delivered nothing does not clear it.
   */
  @Test
  void aTakeoverLeavesTheRowUnknownWhateverTheNextAttemptKnows() throws Exception {
    try (Connection c = db.connection()) {
      HeldClaim a = claim(c, "a");
      claims.expireLease(c, a);
      HeldClaim b = claim(c, "b");
      assertThat(b.reclaimed()).isTrue();
      assertThat(db.queryString("SELECT outcome FROM {schema}.outbox WHERE work_id = 'w1'"))
          .isEqualTo("unknown");
      assertThat(
              claims.settle(c, b, Outcome.fail("refused", Outcome.Effect.NOT_DELIVERED)).applied())
          .isTrue();
    }
    assertThat(
            db.queryString(
                "SELECT state || '/' || outcome FROM {schema}.work WHERE work_id = 'w1'"))
        .isEqualTo("failed/unknown");
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

  /**
   * A claim whose COMMIT reply is lost throws the public {@link CommitOutcomeUnknownException}
   * itself (not the runtime's internal subclass), which a retry loop on {@link RetryableException}
   * does not catch; {@code recover} then finds the claim that did commit.
   */
  @Test
  void aClaimWhoseCommitReplyIsLostThrowsThePublicTypeAndRecoverFindsIt() throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        Connection c = DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
      proxy.dropReplyAfterNextCommit();
      assertThatThrownBy(() -> claims.claimNext(c, "a", "default", KIND, LEASE))
          .isExactlyInstanceOf(CommitOutcomeUnknownException.class)
          .isNotInstanceOf(RetryableException.class);
    }
    try (Connection c = db.connection()) {
      assertThat(claims.recover(c, "a"))
          .singleElement()
          .satisfies(h -> assertThat(h.workId()).isEqualTo("w1"));
    }
  }

  @Test
  void aMegabyteOfReasonIsStoredCutToItsFirstFourThousandCharacters() throws Exception {
    try (Connection c = db.connection()) {
      String huge = "x".repeat(3999) + "\uD83D\uDE00" + "y".repeat(1 << 20);
      assertThat(claims.settle(c, claim(c, "a"), Outcome.retry(huge)).applied()).isTrue();
    }
    assertThat(db.queryString("SELECT last_error FROM {schema}.outbox WHERE work_id = 'w1'"))
        .isEqualTo("x".repeat(3999) + "...");
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
      assertThatThrownBy(() -> claims.settle(c, null, Outcome.done()))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("claim");
      assertThatThrownBy(() -> claims.recover(c, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId");
    }
  }

  /**
   * Arguments that would claim work where nothing reaches it, or under names no work can have, are
   * refused before anything is claimed: a lease of centuries held the row running past every
   * redrive and cancel, and overflowed the claim's local clock after the commit.
   */
  @Test
  void claimsThatWouldHoldWorkOutOfReachAreRefusedAndClaimNothing() throws Exception {
    try (Connection c = db.connection()) {
      assertThatThrownBy(
              () -> claims.claimNext(c, "a", "default", KIND, Duration.ofDays(365L * 1000)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease must be at least 1 ms and at most PT24H");
      assertThatThrownBy(() -> claims.claimNext(c, "a", "default", KIND, Duration.ofHours(25)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease");
      assertThatThrownBy(() -> claims.claimNext(c, "a", "", KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("queues: a name is empty");
      assertThatThrownBy(() -> claims.claimNext(c, "a", null, KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("queues: a name is empty");
      assertThatThrownBy(() -> claims.claimNext(c, "a", "default", "a b", LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("kinds: a name 'a b' must be 1-100 characters");
      assertThatThrownBy(() -> claims.claim(c, "a", List.of(), List.of(KIND), 1, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("queues must name at least one");
      assertThatThrownBy(() -> claims.claimNext(c, "w".repeat(201), "default", KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId must be 1-200 characters");
      assertThatThrownBy(() -> claims.claimNext(c, "  ", "default", KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId");
      // overflowed the millisecond conversion (ArithmeticException), or reached the database
      assertThatThrownBy(
              () -> claims.claimNext(c, "a", "default", KIND, Duration.ofSeconds(Long.MAX_VALUE)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease must be at least 1 ms");
      assertThatThrownBy(() -> claims.claimNext(c, "w\u0000x", "default", KIND, LEASE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("workerId must not contain a NUL character");
      // the longest lease is taken
      HeldClaim held =
          claims.claimNext(c, "a", "default", KIND, ManualClaims.MAX_LEASE).orElseThrow();
      assertThatThrownBy(() -> claims.renew(c, held, ManualClaims.MAX_LEASE.plusMillis(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lease");
      assertThat(claims.renew(c, held, ManualClaims.MAX_LEASE).applied()).isTrue();
      for (Outcome tooLate :
          List.of(
              Outcome.retry("r").after(Duration.ofSeconds(Long.MAX_VALUE)),
              Outcome.retry("r").after(Duration.ofDays(365L * 300_000)))) {
        assertThatThrownBy(() -> claims.settle(c, held, tooLate))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("a retry's delay must be between 0 and 36500 days");
      }
      for (Outcome tooLate :
          List.of(
              Outcome.snooze(Duration.ofDays(365L * 300_000)),
              Outcome.retryAfter(Duration.ofDays(365L * 300_000), "r"))) {
        assertThatThrownBy(() -> claims.settle(c, held, tooLate))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("a snooze's delay must be between 0 and 36500 days");
      }
    }
    assertThat(db.queryLong("SELECT claim_generation FROM {schema}.outbox WHERE work_id = 'w1'"))
        .isEqualTo(1);
  }
}
