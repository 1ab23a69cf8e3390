package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Wake-ups: with a poll interval of a minute, only NOTIFY (or the poll right after a listener
 * reconnects) can explain a pickup within {@link #PROMPTLY}. The bound is far below the poll
 * interval, not tight: it proves the mechanism, not a latency.
 */
@RelayDatabaseTest
class RelayNotifyTest {
  private static final Duration SLOW_POLL = Duration.ofSeconds(60);
  private static final Duration PROMPTLY = Duration.ofSeconds(25);

  @Test
  void committedEnqueueIsPickedUpByNotifyLongBeforeThePoll(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .pollInterval(SLOW_POLL)
              .pollJitter(0)
              .listener(events)
              .handle("k", RelayFixture::done));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("listenerConnected") == 1);
      // Let the start-up polls pass, so that only a notification can wake the claimer now.
      await().atMost(RelayFixture.PATIENCE).until(() -> listeners(db) == 1);

      f.enqueue(Work.of("w1", "k", "{}"));
      await().atMost(PROMPTLY).until(() -> "done".equals(f.state("w1")));
      f.enqueue(Work.of("w2", "k", "{}"));
      await().atMost(PROMPTLY).until(() -> "done".equals(f.state("w2")));
    }
  }

  @Test
  void withNotificationsOffWorkIsStillPickedUpByPolling(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .notifications(false)
              .pollInterval(Duration.ofMillis(300))
              .handle("k", RelayFixture::done));
      Outbox quiet = Outbox.builder().schema(db.schema()).notifications(false).build();
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        quiet.enqueue(c, Work.of("w", "k", "{}"));
        c.commit();
      }

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(listeners(db)).isZero();
    }
  }

  @Test
  void afterTheListeningConnectionIsKilledWakeUpsResumeAndMissedWorkIsPickedUp(TestDatabase db)
      throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      RelayFixture.Recorder events = new RelayFixture.Recorder();
      f.start(
          f.builder()
              .pollInterval(SLOW_POLL)
              .pollJitter(0)
              .listenConnections(() -> DriverManager.getConnection(db.jdbcUrl()))
              .listener(events)
              .handle("k", RelayFixture::done));
      await().atMost(RelayFixture.PATIENCE).until(() -> listeners(db) == 1);
      long first = listenerPid(db);

      db.execute("SELECT pg_terminate_backend(" + first + ")");
      // Enqueued while nobody may be listening: its notification can be lost.
      f.enqueue(Work.of("missed", "k", "{}"));

      await().atMost(PROMPTLY).until(() -> "done".equals(f.state("missed")));
      await().atMost(RelayFixture.PATIENCE).until(() -> events.count("listenerConnected") == 2);
      assertThat(events.events).contains("listenerLost");
      await().atMost(RelayFixture.PATIENCE).until(() -> listeners(db) == 1);
      assertThat(listenerPid(db)).isNotEqualTo(first);

      f.enqueue(Work.of("after", "k", "{}"));
      await().atMost(PROMPTLY).until(() -> "done".equals(f.state("after")));
    }
  }

  @Test
  void aTransactionSendsOneNotificationHoweverMuchItEnqueues(TestDatabase db) throws Exception {
    RelayFixture f = new RelayFixture(db);
    try (Connection listener = DriverManager.getConnection(db.jdbcUrl())) {
      try (Statement s = listener.createStatement()) {
        s.execute("LISTEN relay_" + db.schema());
      }
      PGConnection pg = listener.unwrap(PGConnection.class);
      AtomicInteger received = new AtomicInteger();

      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        f.outbox.enqueue(c, Work.of("a", "k", "{}"));
        f.outbox.enqueue(c, Work.of("b", "k", "{}"));
        f.outbox.enqueueAll(c, java.util.List.of(Work.of("c", "k", "{}"), Work.of("d", "k", "{}")));
        c.commit();
      }
      await().atMost(RelayFixture.PATIENCE).until(() -> (received.addAndGet(drain(pg))) >= 1);
      // Nothing more arrives: the four inserts were folded into one notification.
      await()
          .during(Duration.ofSeconds(1))
          .atMost(RelayFixture.PATIENCE)
          .until(() -> received.addAndGet(drain(pg)) == 1);

      // A rolled-back transaction and an idempotent repeat (nothing inserted) notify nobody.
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        f.outbox.enqueue(c, Work.of("e", "k", "{}"));
        c.rollback();
        f.outbox.enqueue(c, Work.of("a", "k", "{}"));
        c.commit();
      }
      await()
          .during(Duration.ofSeconds(1))
          .atMost(RelayFixture.PATIENCE)
          .until(() -> received.addAndGet(drain(pg)) == 1);
    }
  }

  private static int drain(PGConnection pg) throws SQLException {
    PGNotification[] n = pg.getNotifications(100);
    return n == null ? 0 : n.length;
  }

  private static long listeners(TestDatabase db) throws SQLException {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN relay_{schema}'"
            .replace("relay_{schema}", "relay_" + db.schema()));
  }

  private static long listenerPid(TestDatabase db) throws SQLException {
    return db.queryLong(
        "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN relay_" + db.schema() + "'");
  }
}
