package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.admin.Admin;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.internal.jdbc.Deployment;
import dev.relay.test.PgBouncer;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Relay behind PgBouncer in transaction pooling mode: everything but the session parts (LISTEN, the
 * maintenance lock) runs through the pooler, with pgjdbc's {@code prepareThreshold=0} (the
 * installed PgBouncer, Debian's 1.18, predates {@code max_prepared_statements}); the session parts
 * get a direct connection. A LISTEN connection pooled by mistake degrades to polling with a
 * warning; a pooled maintenance lock connection is refused.
 */
@RelayDatabaseTest
class BehindPgBouncerTest {
  private static PgBouncer bouncer; // one per class, in front of the test server
  private final List<HikariDataSource> pools = new ArrayList<>();

  private static synchronized PgBouncer bouncer(TestDatabase db) throws Exception {
    if (bouncer == null) {
      bouncer = PgBouncer.inFrontOf(db);
    }
    return bouncer;
  }

  @AfterAll
  static synchronized void stopBouncer() {
    if (bouncer != null) {
      bouncer.close();
      bouncer = null;
    }
  }

  @AfterEach
  void closePools() {
    pools.forEach(HikariDataSource::close);
  }

  private HikariDataSource pooled(TestDatabase db, int size) throws Exception {
    return pooled(bouncer(db).jdbcUrl(db), size);
  }

  private HikariDataSource pooled(String url, int size) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setMaximumPoolSize(size);
    c.setPoolName("via-pgbouncer");
    HikariDataSource ds = new HikariDataSource(c);
    pools.add(ds);
    return ds;
  }

  private static ConnectionFactory direct(TestDatabase db) {
    return () -> DriverManager.getConnection(db.jdbcUrl());
  }

  /** Records the events these tests look at. */
  static final class Seen implements RelayEventListener {
    final AtomicInteger listening = new AtomicInteger();
    final List<String> unavailable = new CopyOnWriteArrayList<>();

    @Override
    public void listenerConnected() {
      listening.incrementAndGet();
    }

    @Override
    public void notificationsUnavailable(String reason) {
      unavailable.add(reason);
    }
  }

  @Test
  void theFixtureIsPgBouncerInTransactionPoolingMode(TestDatabase db) throws Exception {
    assertThat(bouncer(db).runningVersion()).matches("\\d+\\.\\d+(\\.\\d+)?");
    try (Connection c = pooled(db, 1).getConnection()) {
      assertThat(Deployment.direct(c)).as("a PgBouncer client is not a session").isFalse();
    }
    try (Connection c = DriverManager.getConnection(db.jdbcUrl())) {
      assertThat(Deployment.direct(c)).isTrue();
    }
  }

  /**
   * Why the pooled URL says {@code prepareThreshold=0}: a statement pgjdbc prepared on one server
   * session under a name is not known to the next one PgBouncer (before 1.21) lends the client.
   * With a fresh PgBouncer the first transaction runs on the only server session; a second client
   * holding that one in an open transaction sends the next transaction to a new session.
   */
  @Test
  void namedServerSidePreparedStatementsBreakThroughTransactionPoolingUnlessTurnedOff(
      TestDatabase db) throws Exception {
    try (PgBouncer fresh = PgBouncer.inFrontOf(db)) {
      String named = db.jdbcUrlVia("127.0.0.1", fresh.port()) + "&prepareThreshold=1";
      assertThat((Throwable) secondExecutionOnAnotherServerSession(named))
          .isNotNull()
          .hasMessageMatching(
              "(?s).*prepared statement \"S_\\d+\" (does not exist|already exists).*");
    }
    try (PgBouncer fresh = PgBouncer.inFrontOf(db)) {
      assertThat((Throwable) secondExecutionOnAnotherServerSession(fresh.jdbcUrl(db))).isNull();
    }
  }

  /**
   * The first error of the sequence (a's second execution on another server session, or b's own
   * named statement colliding with a's on the session they share), or null when all succeeded.
   */
  private static SQLException secondExecutionOnAnotherServerSession(String url) {
    try (Connection a = DriverManager.getConnection(url);
        Connection b = DriverManager.getConnection(url);
        PreparedStatement ps = a.prepareStatement("SELECT pg_backend_pid() + ?")) {
      ps.setInt(1, 0);
      ps.executeQuery().close(); // the only server session so far; named there if threshold 1
      b.setAutoCommit(false);
      try (Statement s = b.createStatement()) {
        s.execute("SELECT 1"); // b now holds that session in its transaction
      }
      ps.executeQuery().close(); // on a new server session
      b.rollback();
      return null;
    } catch (SQLException e) {
      return e;
    }
  }

  @Test
  void order103IsEnqueuedClaimedAndCompletedThroughPgBouncer(TestDatabase db) throws Exception {
    HikariDataSource pool = pooled(db, 4);
    Seen seen = new Seen();
    try (RelayFixture f = new RelayFixture(db)) {
      Relay relay =
          f.start(
              f.builder(pool)
                  .pollInterval(Duration.ofMinutes(5)) // a wake-up can only come from NOTIFY
                  .listenConnections(direct(db))
                  .listener(seen)
                  .handle(
                      "order_received",
                      claim ->
                          Outcome.done(
                              "msg-" + claim.workId(), "{\"accepted\": true}", Milestone.QUEUED)));
      await().atMost(RelayFixture.PATIENCE).until(() -> seen.listening.get() > 0);
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        f.outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order_id\":103}"));
        f.outbox.enqueue(c, Work.of("order-104-ack", "order_received", "{\"order_id\":104}"));
        c.commit();
      }

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("order-103-ack")));
      assertThat(f.row("order-103-ack"))
          .containsEntry("receiver_ref", "msg-order-103-ack")
          .containsEntry("outcome", "delivered")
          .containsEntry("attempts", "1");
      assertThat(seen.unavailable).isEmpty();
      // The admin API through the pooler too.
      Admin admin = Admin.create(pool, db.schema());
      assertThat(admin.health(Duration.ofMinutes(5))).isNotEmpty();
      f.enqueue(Work.of("order-105-ack", "later", "{}"));
      assertThat(relay.cancel("order-105-ack", "ops", "not needed").status())
          .isEqualTo(CancelResult.Status.CANCELLED);
    }
  }

  @Test
  void aBurnDownWithLimitsAndLeaseRenewalsRunsThroughPgBouncer(TestDatabase db) throws Exception {
    HikariDataSource pool = pooled(db, 6);
    AtomicInteger running = new AtomicInteger();
    AtomicInteger mostRunning = new AtomicInteger();
    Handler limited =
        claim -> {
          mostRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
          try {
            return Outcome.done("ok-" + claim.workId());
          } finally {
            running.decrementAndGet();
          }
        };
    Handler slow =
        claim -> {
          Thread.sleep(2500); // simulated work, more than two leases long: renewals must pass
          return Outcome.done("slow-" + claim.workId());
        };
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 800; i++) {
      works.add(Work.of("bulk-" + i, "bulk", "{\"n\":" + i + "}"));
    }
    for (int i = 0; i < 3; i++) {
      works.add(Work.of("slow-" + i, "slow", "{}"));
    }
    try (RelayFixture f = new RelayFixture(db)) {
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        f.outbox.enqueueAll(c, works);
        c.commit();
      }
      for (String worker : List.of("a", "b")) {
        f.start(
            f.builder(pool)
                .workerId("bouncer-" + worker)
                .concurrency(8)
                .lease(Duration.ofSeconds(1))
                .listenConnections(direct(db))
                .handle("bulk", KindPolicy.DEFAULT.withMaxRunning(3), limited)
                .handle("slow", slow));
      }

      await()
          .atMost(Duration.ofMinutes(3))
          .until(
              () ->
                  db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'")
                      == works.size());
      assertThat(mostRunning.get()).as("maxRunning across both workers").isLessThanOrEqualTo(3);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.attempt"))
          .as("no lease expired, no attempt lost: every item done at its first attempt")
          .isZero();
    }
  }

  @Test
  void aListenConnectionThroughPgBouncerDegradesToPollingWithAWarning(TestDatabase db)
      throws Exception {
    HikariDataSource pool = pooled(db, 4);
    String viaBouncer = bouncer(db).jdbcUrl(db);
    Seen seen = new Seen();
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder(pool)
              .pollInterval(Duration.ofMillis(300))
              .listenConnections(() -> DriverManager.getConnection(viaBouncer))
              .listener(seen)
              .handle("order_received", claim -> Outcome.done("msg-" + claim.workId())));

      await().atMost(RelayFixture.PATIENCE).until(() -> !seen.unavailable.isEmpty());
      assertThat(seen.unavailable.get(0))
          .contains("connection pooler", "listenConnections", "polling");
      assertThat(seen.listening.get()).as("never reported as listening").isZero();
      f.enqueue(Work.of("order-103-ack", "order_received", "{\"order_id\":103}"));
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("order-103-ack")));
    }
  }

  @Test
  void maintenanceRefusesALockConnectionThroughPgBouncerAndLeadsOnADirectOne(TestDatabase db)
      throws Exception {
    HikariDataSource pool = pooled(db, 2);
    String viaBouncer = bouncer(db).jdbcUrl(db);
    MaintenanceConfig config = MaintenanceConfig.DEFAULT.withSchema(db.schema());
    try (Maintenance pooledLock =
        Maintenance.create(pool, () -> DriverManager.getConnection(viaBouncer), config)) {
      assertThatThrownBy(pooledLock::runOnce)
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("lockConnections")
          .hasMessageContaining("connection pooler");
    }
    try (Maintenance directLock = Maintenance.create(pool, direct(db), config)) {
      assertThat(directLock.runOnce().leader()).isTrue();
    }
  }

  @Test
  void migrationsRunThroughPgBouncer(TestDatabase db) throws Exception {
    // A pooler of its own that hands each transaction to the next server connection in turn, with
    // four of them open: a statement that relied on session state would run on another session.
    PgBouncer roundRobin =
        PgBouncer.start(db.host(), db.port(), db.user(), Map.of("server_round_robin", "1"));
    HikariDataSource pool = pooled(roundRobin.jdbcUrl(db), 4);
    List<Connection> held = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Connection c = pool.getConnection();
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      held.add(c);
    }
    for (Connection c : held) {
      c.commit();
      c.close();
    }
    String schema = db.schema() + "_m";
    ExecutorService racers = Executors.newFixedThreadPool(2);
    try {
      // Two migrators race through the pooler, across the concurrent index build (version 23):
      // each version is applied once, and no lock is left on a server connection afterwards.
      List<Future<Migrator.Report>> runs = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        runs.add(racers.submit(() -> Migrator.migrate(pool, schema)));
      }
      List<Integer> applied = new ArrayList<>();
      for (Future<Migrator.Report> run : runs) {
        Migrator.Report report = run.get(2, TimeUnit.MINUTES);
        assertThat(report.currentVersion()).isEqualTo(Migrator.LATEST_VERSION);
        applied.addAll(report.applied());
      }
      assertThat(applied).doesNotHaveDuplicates().hasSize(Migrator.LATEST_VERSION);
      assertThat(db.queryLong("SELECT count(*) FROM " + schema + ".outbox")).isZero();
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                      + " AND objid::bigint = (hashtext('"
                      + schema
                      + "')::bigint & 4294967295)"))
          .as("migration locks left behind")
          .isZero();
      assertThat(Migrator.migrate(pool, schema).applied()).isEmpty();
    } finally {
      racers.shutdownNow();
      pool.close();
      roundRobin.close();
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }
}
