package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.admin.Admin;
import dev.relay.admin.Pause;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Pause and resume across several workers, sampled on the database: a paused kind is not claimed by
 * any of them while other work drains, a resume wakes them by notification (their poll is far
 * longer than the bound), a pause waits for the claims in flight and none is made after it, and an
 * automatic resume frees the work on the database clock.
 */
@RelayDatabaseTest
class RelayPauseTest {
  private static final Duration SLOW_POLL = Duration.ofMinutes(10);
  private static final Duration PROMPTLY = Duration.ofSeconds(25);
  private static final int INSTANCES = 4;

  @Test
  void aPausedKindIsClaimedByNoneOfFourInstancesWhileAnotherDrainsAndResumeWakesThem(
      TestDatabase db) {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (RelayFixture f = new RelayFixture(db)) {
      admin.pause(null, "held", "olga", "receiver down, INC-7", null);
      List<RelayFixture.Recorder> events = new ArrayList<>();
      for (int i = 0; i < INSTANCES; i++) {
        RelayFixture.Recorder e = new RelayFixture.Recorder();
        events.add(e);
        f.start(
            f.builder()
                .workerId("w" + i)
                .pollInterval(SLOW_POLL)
                .pollJitter(0)
                .listener(e)
                .handle("held", RelayFixture::done)
                .handle("free", RelayFixture::done));
      }
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> events.stream().allMatch(e -> e.count("listenerConnected") == 1));
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        works.add(Work.of("held-" + i, "held", "{}"));
      }
      for (int i = 0; i < 2000; i++) {
        works.add(Work.of("free-" + i, "free", "{}"));
      }
      f.enqueue(works);

      // Every sample while the other kind drains: no held item was ever claimed.
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () -> {
                assertThat(touched(f, "held")).isZero();
                return f.count("kind = 'free' AND state = 'done'") == 2000;
              });
      await()
          .during(Duration.ofSeconds(1))
          .atMost(RelayFixture.PATIENCE)
          .until(() -> touched(f, "held") == 0);
      assertThat(f.count("kind = 'held' AND state = 'ready'")).isEqualTo(200);

      Instant resumed = Instant.now();
      assertThat(admin.resume(null, "held", "olga", "receiver back")).isPresent();
      // The poll is ten minutes away: only the resume's notification explains this.
      await().atMost(PROMPTLY).until(() -> f.count("kind = 'held' AND state = 'done'") == 200);
      assertThat(Duration.between(resumed, Instant.now())).isLessThan(PROMPTLY);
    }
  }

  @Test
  void aPauseWaitsForClaimsInFlightAndNoClaimIsMadeAfterIt(TestDatabase db) throws Exception {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (RelayFixture f = new RelayFixture(db)) {
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        works.add(Work.of("k-" + i, "k", "{}"));
      }
      f.enqueue(works);
      // A claim transaction in flight: it has read the pause table (as every claim does) and
      // has not committed.
      try (Connection inFlight = db.connection()) {
        inFlight.setAutoCommit(false);
        try (Statement s = inFlight.createStatement()) {
          s.execute("SELECT count(*) FROM " + db.schema() + ".pause");
        }
        CompletableFuture<Pause> pause =
            CompletableFuture.supplyAsync(
                () -> admin.pause(null, "k", "olga", "receiver down", null));
        await().atMost(RelayFixture.PATIENCE).until(() -> waitingForLock(db) == 1);
        assertThat(pause).isNotDone();
        inFlight.commit();
        assertThat(pause.get().kind()).isEqualTo("k");
      }
      admin.resume(null, "k", "olga", "again, under load");

      // Small claims and buffers: at most INSTANCES x (50 + 50 + handler slots) claimed ahead of
      // completion, so work is still ready when the pause comes however fast the claims run
      // beside slow completions on a loaded machine.
      for (int i = 0; i < INSTANCES; i++) {
        f.start(
            f.builder()
                .workerId("w" + i)
                .batchSize(50)
                .bufferSize(50)
                .handle("k", RelayFixture::done));
      }
      await().atMost(RelayFixture.PATIENCE).until(() -> f.count("state = 'done'") >= 1_000);
      Pause p = admin.pause(null, "k", "olga", "receiver down again", null);

      // No claim is dated after the pause began: claims in flight committed before it.
      long after = claimsAfter(db, p.pausedAt());
      assertThat(after).isZero();
      long ready = f.count("state = 'ready'");
      assertThat(ready).isPositive();
      await()
          .during(Duration.ofSeconds(2))
          .atMost(RelayFixture.PATIENCE)
          .until(() -> claimsAfter(db, p.pausedAt()) == 0 && f.count("state = 'ready'") == ready);
    }
  }

  @Test
  void anAutomaticResumeFreesTheWorkOnTheDatabaseClock(TestDatabase db) throws SQLException {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (RelayFixture f = new RelayFixture(db)) {
      Instant now = Instant.parse(db.queryString("SELECT to_json(clock_timestamp())#>>'{}'"));
      Pause p = admin.pause("default", null, "olga", "maintenance window", now.plusSeconds(3));
      assertThat(admin.pauses()).containsExactly(p);
      f.enqueue(Work.of("w", "k", "{}"));
      f.start(f.builder().handle("k", RelayFixture::done));

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.work"
                      + " WHERE work_id = 'w' AND claimed_at >= '"
                      + p.resumeAt()
                      + "'"))
          .isOne();
      assertThat(admin.pauses()).isEmpty();
    }
  }

  /** Rows of {@code kind} that were ever claimed, or are not ready. */
  private static long touched(RelayFixture f, String kind) {
    return f.count("kind = '" + kind + "' AND (state <> 'ready' OR attempts > 0)");
  }

  private static long claimsAfter(TestDatabase db, Instant t) throws SQLException {
    return db.queryLong("SELECT count(*) FROM {schema}.work WHERE claimed_at > '" + t + "'");
  }

  private static long waitingForLock(TestDatabase db) throws SQLException {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity"
            + " WHERE wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE%pause%'");
  }
}
