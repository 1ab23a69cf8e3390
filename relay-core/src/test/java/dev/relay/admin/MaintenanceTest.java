package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class MaintenanceTest {
  private Maintenance maintenance(TestDatabase db) {
    return Maintenance.create(
        db.dataSource(),
        () -> DriverManager.getConnection(db.jdbcUrl()),
        MaintenanceConfig.DEFAULT.withSchema(db.schema()).withInterval(Duration.ofSeconds(1)));
  }

  /**
   * A failure that repeats every interval (behind a pooler without a direct connection, say) is
   * logged each time in one line; its stack trace only the first time, so the log stays readable.
   */
  @Test
  void aFailureRepeatedEveryIntervalLogsItsStackTraceOnce(TestDatabase db) throws Exception {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream tee =
        new PrintStream(
            new OutputStream() {
              @Override
              public void write(int b) {
                original.write(b);
                synchronized (captured) {
                  captured.write(b);
                }
              }
            },
            true,
            StandardCharsets.UTF_8);
    String failed = "relay maintenance on " + db.schema() + " failed";
    System.setErr(tee);
    try (Maintenance m =
        Maintenance.create(
            db.dataSource(),
            () -> {
              throw new SQLException("refused by the test", "08001");
            },
            MaintenanceConfig.DEFAULT
                .withSchema(db.schema())
                .withInterval(Duration.ofSeconds(1)))) {
      m.start();
      await()
          .atMost(Duration.ofMinutes(1))
          .until(() -> logged(captured).split(failed, -1).length - 1 >= 3);
    } finally {
      System.setErr(original);
    }
    List<String> lines = logged(captured).lines().toList();
    int first = -1;
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains(failed)) {
        first = i;
        break;
      }
    }
    assertThat(lines.get(first)).endsWith("retrying next interval");
    assertThat(lines.get(first + 1)).contains("refused by the test"); // the stack trace's head
    List<String> later =
        lines.subList(first + 1, lines.size()).stream().filter(l -> l.contains(failed)).toList();
    assertThat(later)
        .hasSizeGreaterThanOrEqualTo(2)
        .allSatisfy(l -> assertThat(l).contains("retrying next interval: ").contains("refused"));
    assertThat(lines.stream().filter(l -> l.startsWith("dev.relay.RetryableException")))
        .as("the stack trace's head, once")
        .hasSize(1);
  }

  private static String logged(ByteArrayOutputStream captured) {
    synchronized (captured) {
      return captured.toString(StandardCharsets.UTF_8);
    }
  }

  @Test
  void maintenanceRunsInOnlyOneOfTwoInstancesAtOnce(TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.done("old", "k");
    f.update(
        "UPDATE {schema}.work_history SET completed_at = clock_timestamp() - interval '30 days'");
    try (Maintenance a = maintenance(db);
        Maintenance b = maintenance(db)) {
      MaintenanceResult ra = a.runOnce();
      MaintenanceResult rb = b.runOnce();
      assertThat(ra.leader()).isTrue();
      assertThat(ra.purge().work()).isEqualTo(1);
      assertThat(rb.leader()).isFalse();
      assertThat(rb.purge()).isNull();
      assertThat(a.runOnce().leader()).isTrue(); // keeps the lock between runs
      assertThat(b.runOnce().leader()).isFalse();

      a.stop(); // releases the lock
      assertThat(b.runOnce().leader()).isTrue();
      assertThat(a.runOnce().leader()).isFalse();
    }
  }

  @Test
  void theLeaderRefreshesTheDoneAndCancelledSummaryAfterItsPurge(TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.done("old", "k");
    f.update(
        "UPDATE {schema}.work_history SET completed_at = clock_timestamp() - interval '30 days'");
    f.done("recent", "k");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    try (Maintenance a = maintenance(db);
        Maintenance b = maintenance(db)) {
      MaintenanceResult ra = a.runOnce();
      assertThat(ra.summaryAsOf()).isNotNull();
      assertThat(b.runOnce().summaryAsOf()).isNull(); // not the leader: no refresh either
      QueueHealth k = admin.health(Duration.ofMinutes(5)).get(0);
      // The purged item is gone from the counts; the recent one is counted, as of the refresh.
      assertThat(k.done()).isEqualTo(1);
      assertThat(k.finishedCountsAsOf()).isEqualTo(ra.summaryAsOf());
    }
  }

  @Test
  void startedServiceTakesTheLockAndRunsOnItsOwn(TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.done("old", "k");
    f.update(
        "UPDATE {schema}.work_history SET completed_at = clock_timestamp() - interval '30 days'");
    try (Maintenance a = maintenance(db);
        Maintenance b = maintenance(db)) {
      a.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> f.count("SELECT count(*) FROM {schema}.tombstone") == 1);
      assertThat(a.isLeader()).isTrue();
      assertThat(b.runOnce().leader()).isFalse();
    }
  }

  @Test
  void locksOfDifferentSchemasDoNotCollide(TestDatabase db) {
    try (Maintenance a = maintenance(db);
        Maintenance other =
            Maintenance.create(
                db.dataSource(),
                () -> DriverManager.getConnection(db.jdbcUrl()),
                MaintenanceConfig.DEFAULT.withSchema(db.schema() + "_x"))) {
      assertThat(a.runOnce().leader()).isTrue();
      // Another schema's lock is free (its purge fails: the schema does not exist).
      org.assertj.core.api.Assertions.assertThatThrownBy(other::runOnce)
          .isInstanceOf(dev.relay.RelayException.class);
      assertThat(other.isLeader()).isTrue();
    }
  }
}
