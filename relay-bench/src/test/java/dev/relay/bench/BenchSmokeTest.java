package dev.relay.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Relay;
import dev.relay.test.EmbeddedServer;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Runs every scenario, peers included, at tiny sizes so the harness cannot rot. No timing asserts.
 */
class BenchSmokeTest {
  @Test
  void quickRunCoversEveryScenarioAndSystemAndWritesTheJsonReport(@TempDir Path dir)
      throws Exception {
    Path json = dir.resolve("out.json");
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit =
        new CommandLine(new BenchCommand(new PrintStream(buffer, true, StandardCharsets.UTF_8)))
            .execute("--quick", "--peers", "--jobs", "200", "--json", json.toString());
    String printed = buffer.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(printed).isZero();
    assertThat(printed).contains("fsync=on").contains("synchronous_commit=on").contains("warm-up");
    String report = Files.readString(json);
    assertThat(report).startsWith("{").contains("\"scenarios\":[");
    for (String system :
        new String[] {
          "relay", "postgres-limit", "db-scheduler", "jobrunr", "transaction-outbox", "direct-http"
        }) {
      assertThat(report).contains("\"system\":\"" + system + "\"");
    }
    for (String name :
        new String[] {
          "\"enqueue\"",
          "\"burn-down\"",
          "\"burn-down-xact-per-job\"",
          "\"burn-down-two-queues\"",
          "\"claim-complete\"",
          "\"claim-p50\"",
          "\"claim-p90\"",
          "\"steady-pickup-p50\"",
          "\"steady-completion-p99\"",
          "\"growth-retained\"",
          "\"growth-xmin-held\"",
          "\"growth-xmin-held-two-queues\"",
          "\"growth-empty\"",
          "\"memory-heap-after-burn-down\"",
          "\"memory-heap-peak-live\"",
          "\"memory-bytes-per-retained-row\"",
          "\"stranded-after-kill\"",
          "\"stranded-bound\"",
          "\"slow-receiver\""
        }) {
      assertThat(report).contains("\"name\":" + name);
    }
    assertThat(report).contains("\"median\":").contains("\"unit\":").contains("\"runs\":[");
  }

  @Test
  void theHistoryPartPurgesWhileABurnDownRunsAndReportsTheCost(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("history.json");
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit =
        new CommandLine(new BenchCommand(new PrintStream(buffer, true, StandardCharsets.UTF_8)))
            .execute(
                "--quick",
                "--only",
                "history",
                "--history-rows",
                "3000",
                "--history-purge",
                "1500",
                "--json",
                json.toString());
    String printed = buffer.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(printed).isZero();
    assertThat(printed).contains("purge: 1,500 rows in").contains("burn-down without the purge");
    String report = Files.readString(json);
    for (String name :
        new String[] {
          "\"history-burn-down-during-purge-ratio\"",
          "\"history-purge-wal-per-row\"",
          "\"history-dead-rows-after-purge\"",
          "\"history-vacuum-seconds\"",
          "\"history-purge-cost-share\""
        }) {
      assertThat(report).contains("\"name\":" + name);
    }
  }

  /**
   * Random IDs through the growth part, two runs: the second retained run loads its backlog under
   * the same IDs as the first, so it finishes only if the first one's rows and tombstones were
   * found again from their series and removed.
   */
  @Test
  void theGrowthPartRunsWithRandomIds(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("growth.json");
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit =
        new CommandLine(new BenchCommand(new PrintStream(buffer, true, StandardCharsets.UTF_8)))
            .execute(
                "--quick",
                "--only",
                "growth",
                "--ids",
                "random",
                "--runs",
                "2",
                "--json",
                json.toString());
    String printed = buffer.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(printed).isZero();
    assertThat(printed).contains("ids random");
    assertThat(Files.readString(json))
        .contains("\"ids\":\"random\"")
        .contains("\"name\":\"growth-retained-ratio\"");
  }

  @Test
  void unknownIdsAreRefusedBeforeAnythingRuns() {
    assertThat(refused("--ids", "uuid")).contains("--ids").contains("uuid");
  }

  @Test
  void moreHistoryPurgedThanLoadedIsRefusedBeforeAnythingRuns() {
    assertThat(refused("--only", "history", "--history-rows", "10", "--history-purge", "20"))
        .contains("--history-purge (20) cannot exceed");
  }

  @Test
  void consolePagesRunOnATinyTable(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("pages.json");
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit =
        new CommandLine(new BenchCommand(new PrintStream(buffer, true, StandardCharsets.UTF_8)))
            .execute(
                "--quick",
                "--only",
                "console-pages",
                "--retained",
                "3000",
                "--json",
                json.toString());
    String printed = buffer.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(printed).isZero();
    assertThat(printed).contains("folded").contains("rollup rows");
    assertThat(Files.readString(json))
        .contains("\"name\":\"console-pages\"")
        .contains("\"page\":\"overview\"")
        .contains("\"page\":\"charts-7d-one-pair\"")
        .contains("\"stat\":\"p95\"");
  }

  @Test
  void aSecondRunOnTheSameDatabaseIsRefusedBeforeItChangesAnything() throws Exception {
    try (EmbeddedServer pg = EmbeddedServer.builder().start();
        Connection first = DriverManager.getConnection(pg.jdbcUrl());
        Statement s = first.createStatement()) {
      // what a running bench holds for its whole run
      try (ResultSet rs =
          s.executeQuery(
              "SELECT pg_try_advisory_lock(hashtextextended('" + BenchDb.LOCK_KEY + "', 0))")) {
        assertThat(rs.next() && rs.getBoolean(1)).isTrue();
      }
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int exit =
          BenchCommand.execute(
              new PrintStream(OutputStream.nullOutputStream()),
              new PrintWriter(err, true, StandardCharsets.UTF_8),
              "--quick",
              "--only",
              "enqueue",
              "--jdbc-url",
              pg.jdbcUrl());
      assertThat(exit).isEqualTo(BenchCommand.BUSY);
      assertThat(err.toString(StandardCharsets.UTF_8))
          .contains("another relay bench is running")
          .contains("another database");
      try (ResultSet rs =
          s.executeQuery(
              "SELECT count(*) FROM pg_namespace WHERE nspname IN ('"
                  + RelayBench.SCHEMA
                  + "', 'bench_limit')")) {
        rs.next();
        assertThat(rs.getInt(1)).as("nothing migrated or created").isZero();
      }
    }
  }

  @Test
  void unknownPartIsRefusedByNameBeforeAnythingRuns() {
    assertThat(refused("--only", "burn-down,warp-drive"))
        .contains("--only takes")
        .contains("warp-drive");
  }

  @Test
  void historyDaysOutOfRangeAreRefusedBeforeAnythingRuns() {
    assertThat(refused("--only", "enqueue", "--enqueue-history-days", "61"))
        .contains("--enqueue-history-days must be 0 to 60, was 61");
  }

  @Test
  void theKafkaPartWithoutABrokerIsRefusedBeforeAnythingRuns() {
    assertThat(refused("--only", "kafka")).contains("--only kafka needs --kafka");
  }

  @Test
  void versionIsRelaysAsEveryOtherCommandPrintsIt() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code =
        BenchCommand.execute(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintWriter(Writer.nullWriter()),
            "-V");
    assertThat(code).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("relay " + Relay.version() + "\n");
  }

  /**
   * The README's rule for every command's --jdbc-url: a URL that is not PostgreSQL's, one the
   * driver cannot read, or an empty one is a usage error (exit 2), one line with the password
   * masked; the bench printed a SQLException's stack trace with the password and exited 1.
   */
  @Test
  void aBadJdbcUrlIsAUsageErrorWithThePasswordMaskedAndNoDriverLine() {
    List<LogRecord> driverLines = new CopyOnWriteArrayList<>();
    Logger driverLog = Logger.getLogger("org.postgresql");
    Handler recorder =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            driverLines.add(r);
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    driverLog.addHandler(recorder);
    try {
      assertThat(bench("--jdbc-url", "jdbc:mysql://x?password=topsecret"))
          .isEqualTo(
              new Exit(
                  2,
                  "relay bench: --jdbc-url must be a PostgreSQL JDBC URL like"
                      + " jdbc:postgresql://host:5432/db?user=u, was"
                      + " 'jdbc:mysql://x?password=******'\nsee relay help bench\n"));
      Exit userInfo = bench("--jdbc-url", "jdbc:postgresql://u:topsecret@127.0.0.1/x");
      assertThat(userInfo.code()).as(userInfo.err()).isEqualTo(2);
      assertThat(userInfo.err())
          .startsWith(
              "relay bench: --jdbc-url 'jdbc:postgresql://u:******@127.0.0.1/x' is not a URL the"
                  + " PostgreSQL driver can read")
          .doesNotContain("topsecret");
      assertThat(driverLines).as("pgjdbc's own lines, which quote the URL whole").isEmpty();
      Exit empty = bench("--jdbc-url", "");
      assertThat(empty.code()).as(empty.err()).isEqualTo(2);
      assertThat(empty.err()).startsWith("relay bench: --jdbc-url is empty");
    } finally {
      driverLog.removeHandler(recorder);
    }
  }

  /** An unreachable database is one line and exit 3, not a PSQLException's stack trace. */
  @Test
  void anUnreachableDatabaseIsExitThreeInOneLine() {
    assertThat(bench("--quick", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x?password=topsecret"))
        .isEqualTo(
            new Exit(3, "relay bench: database unavailable: connection refused at 127.0.0.1:1\n"));
  }

  /** What {@link BenchCommand#execute} returned and printed on stderr. */
  record Exit(int code, String err) {}

  private static Exit bench(String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code =
        BenchCommand.execute(
            new PrintStream(OutputStream.nullOutputStream()),
            new PrintWriter(err, true, StandardCharsets.UTF_8),
            args);
    return new Exit(code, err.toString(StandardCharsets.UTF_8));
  }

  /** Runs the bench with {@code args}, asserts the usage exit code (2), and returns stderr. */
  private static String refused(String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cmd =
        new CommandLine(new BenchCommand(new PrintStream(OutputStream.nullOutputStream())));
    cmd.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
    assertThat(cmd.execute(args)).as("exit code of a refused run").isEqualTo(2);
    return err.toString(StandardCharsets.UTF_8);
  }
}
