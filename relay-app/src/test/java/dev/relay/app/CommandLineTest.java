package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Relay;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code relay} command end to end, each call a separate process against real PostgreSQL. */
@RelayDatabaseTest
class CommandLineTest {
  private static final String UNREACHABLE = "jdbc:postgresql://127.0.0.1:1/x?connectTimeout=5";

  static String[] on(TestDatabase db, String... args) {
    String[] all = new String[args.length + 4];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--jdbc-url";
    all[args.length + 1] = db.jdbcUrl();
    all[args.length + 2] = "--schema";
    all[args.length + 3] = db.schema();
    return all;
  }

  @Nested
  class Errors {
    @Test
    void unknownOptionIsAUsageError() {
      Cli.Result r = Cli.run("status", "--no-such-option");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err()).contains("Unknown option: '--no-such-option'");
    }

    @Test
    void unknownCommandIsAUsageErrorThatSaysSoAndListsTheCommands() {
      Cli.Result r = Cli.run("frobnicate");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err())
          .startsWith("relay: unknown command 'frobnicate'; the commands are ")
          .contains("migrate, passwd, pause, purge, redrive")
          .contains("see relay --help")
          .doesNotContain("Unmatched argument");
      Cli.Result typo = Cli.run("stauts");
      assertThat(typo.err()).contains("unknown command 'stauts' (did you mean status?)");
    }

    @Test
    void aPasswordInAJdbcUrlIsNeverEchoed() {
      String query = "jdbc:postgres://127.0.0.1:5432/test?user=postgres&password=SECRETPW";
      Cli.Result notPostgres = Cli.run("status", "--jdbc-url", query);
      assertThat(notPostgres.exitCode()).as(notPostgres.toString()).isEqualTo(2);
      assertThat(notPostgres.err())
          .contains("?user=postgres&password=******'")
          .doesNotContain("SECRETPW");
      Cli.Result userInfo = Cli.run("status", "--jdbc-url", "jdbc:pg://mina:SECRETPW@db:5432/x");
      assertThat(userInfo.exitCode()).as(userInfo.toString()).isEqualTo(2);
      assertThat(userInfo.err()).contains("//mina:******@db").doesNotContain("SECRETPW");
      // Echoed by picocli, among the arguments it did not match.
      Cli.Result unmatched =
          Cli.run(
              "status",
              "extra",
              "--jdbc-url",
              "jdbc:postgresql://127.0.0.1:1/x?password=SECRETPW&user=u");
      assertThat(unmatched.exitCode()).as(unmatched.toString()).isEqualTo(2);
      assertThat(unmatched.err()).doesNotContain("SECRETPW");
      Cli.Result fromEnv =
          Cli.run(java.util.Map.of("RELAY_JDBC_URL", "postgres://u:SECRETPW@h/db"), "status");
      assertThat(fromEnv.exitCode()).as(fromEnv.toString()).isEqualTo(2);
      assertThat(fromEnv.err()).contains("env RELAY_JDBC_URL").doesNotContain("SECRETPW");
    }

    /**
     * pgjdbc cannot read {@code //user:password@host} (nor a port that is not a number): it logged
     * the URL, password and all, through java.util.logging on stderr, and the command called the
     * database unavailable (exit 3). Now a usage error naming the option, its password masked, and
     * no line of the driver's.
     */
    @Test
    void aUrlTheDriverCannotReadIsAUsageErrorWithItsPasswordMasked() {
      Cli.Result r = Cli.run("status", "--jdbc-url", "jdbc:postgresql://mina:SECRETPW@127.0.0.1/x");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err())
          .isEqualTo(
              "relay status: --jdbc-url 'jdbc:postgresql://mina:******@127.0.0.1/x' is not a URL"
                  + " the PostgreSQL driver can read (a host, an optional port number, then"
                  + " /database), like jdbc:postgresql://host:5432/db?user=u: give the user and the"
                  + " password as its parameters user and password, not before an @\n"
                  + "see relay help status\n");
      // With a port, pgjdbc reads it (host "mina:SECRETPW@127.0.0.1"), and the "unknown host"
      // error of the connection printed the password: refused the same way.
      Cli.Result withPort =
          Cli.run("status", "--jdbc-url", "jdbc:postgresql://mina:SECRETPW@127.0.0.1:5432/x");
      assertThat(withPort.exitCode()).as(withPort.toString()).isEqualTo(2);
      assertThat(withPort.err())
          .startsWith("relay status: --jdbc-url 'jdbc:postgresql://mina:******@127.0.0.1:5432/x'")
          .contains("not before an @")
          .doesNotContain("SECRETPW");
      Cli.Result fromEnv =
          Cli.run(
              java.util.Map.of("RELAY_JDBC_URL", "jdbc:postgresql://h:port/x?password=SECRETPW"),
              "list");
      assertThat(fromEnv.exitCode()).as(fromEnv.toString()).isEqualTo(2);
      assertThat(fromEnv.err())
          .startsWith("relay list: env RELAY_JDBC_URL 'jdbc:postgresql://h:port/x?password=******'")
          .doesNotContain("SECRETPW")
          .doesNotContain("WARNING");
    }

    /**
     * pgjdbc reads {@code sslmode=bogus} and refuses it only on connecting, with the SQLState of an
     * unreachable server: it was "database unavailable", exit 3, though the README counts a URL the
     * driver cannot read among the usage errors. Now exit 2 before anything connects, naming the
     * parameter and what the driver takes, password masked; so are values pgjdbc would ignore.
     */
    @Test
    void aUrlParameterTheDriverDoesNotTakeIsAUsageErrorNamingIt() {
      String base = "jdbc:postgresql://127.0.0.1:5432/DB?user=postgres&password=SECRETPW&";
      for (String parameter :
          List.of("sslmode=bogus", "prepareThreshold=x", "loginTimeout=abc", "connectTimeout=-5")) {
        Cli.Result r = Cli.run("status", "--jdbc-url", base + parameter);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err())
            .as(r.toString())
            .startsWith(
                "relay status: --jdbc-url 'jdbc:postgresql://127.0.0.1:5432/DB?user=postgres"
                    + "&password=******&"
                    + parameter
                    + "' has parameter "
                    + parameter
                    + ", which the PostgreSQL driver does not take: it takes ")
            .endsWith("\nsee relay help status\n")
            .doesNotContain("SECRETPW");
      }
      Cli.Result demo = Cli.run("demo", "--jdbc-url", base + "sslmode=bogus");
      assertThat(demo.exitCode()).as(demo.toString()).isEqualTo(2);
      assertThat(demo.err()).startsWith("relay demo: --jdbc-url '").contains("sslmode=bogus,");
    }

    /**
     * A value pgjdbc checks only as it connects ({@code defaultRowFetchSize=-3}), or one the server
     * refuses ({@code options=-c statement_timeout=abc}): SQLState 22023, a usage error naming the
     * URL, not an unavailable database.
     */
    @Test
    void aUrlValueRefusedOnConnectingIsAUsageError(TestDatabase db) {
      Cli.Result driver = Cli.run("status", "--jdbc-url", UNREACHABLE + "&defaultRowFetchSize=-3");
      assertThat(driver.exitCode()).as(driver.toString()).isEqualTo(2);
      assertThat(driver.err())
          .as(driver.toString())
          .isEqualTo(
              "relay status: --jdbc-url '"
                  + UNREACHABLE
                  + "&defaultRowFetchSize=-3' has a value the PostgreSQL driver or server"
                  + " refuses: Fetch size must be a value greater than or equal to 0.\n"
                  + "see relay help status\n");
      String url =
          db.jdbcUrl()
              + (db.jdbcUrl().contains("?") ? "&" : "?")
              + "options=-c%20statement_timeout=abc";
      Cli.Result server =
          Cli.run(java.util.Map.of("RELAY_JDBC_URL", url), "list", "--schema", db.schema());
      assertThat(server.exitCode()).as(server.toString()).isEqualTo(2);
      assertThat(server.err())
          .as(server.toString())
          .startsWith("relay list: env RELAY_JDBC_URL '")
          .contains("' has a value the PostgreSQL driver or server refuses: FATAL: invalid value")
          .contains("statement_timeout")
          .doesNotContain("database unavailable");
    }

    @Test
    void invalidSchemaNameIsAUsageErrorBeforeAnyConnection() {
      Cli.Result r = Cli.run("status", "--jdbc-url", UNREACHABLE, "--schema", "Bad-Name");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err()).startsWith("relay status: --schema 'Bad-Name' is not a plain identifier");
    }

    @Test
    void unreachableDatabaseIsExitThreeWithOneLineAndNoStackTrace() {
      Cli.Result r = Cli.run("status", "--jdbc-url", UNREACHABLE);
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
      assertThat(r.err().lines()).hasSize(1);
      assertThat(r.err()).startsWith("relay status: database unavailable: ");
      assertThat(r.err()).doesNotContain("\tat ").doesNotContain("Exception");
      assertThat(r.out()).isEmpty();
    }

    @Test
    void aRefusedConnectionAndAnUnknownHostAreNamedInTheOneLine() {
      Cli.Result refused = Cli.run("status", "--jdbc-url", UNREACHABLE);
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(3);
      assertThat(refused.err())
          .isEqualTo("relay status: database unavailable: connection refused at 127.0.0.1:1\n");
      Cli.Result unknown =
          Cli.run(
              "status",
              "--jdbc-url",
              "jdbc:postgresql://nosuchhost.invalid:5432/test?user=postgres");
      assertThat(unknown.exitCode()).as(unknown.toString()).isEqualTo(3);
      assertThat(unknown.err())
          .isEqualTo("relay status: database unavailable: unknown host nosuchhost.invalid\n");
    }

    /**
     * A port that accepts the connection and never answers (here a socket of this test's) is exit 3
     * after the default login timeout, 10 s, instead of a command that waits forever.
     */
    @Test
    void aServerThatNeverAnswersIsExitThreeAfterTheLoginTimeout() throws Exception {
      List<Socket> held = new CopyOnWriteArrayList<>();
      try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
        Thread acceptor =
            new Thread(
                () -> {
                  try {
                    while (true) {
                      held.add(silent.accept()); // and never writes
                    }
                  } catch (IOException closed) {
                    // the test is over
                  }
                });
        acceptor.setDaemon(true);
        acceptor.start();
        String url = "jdbc:postgresql://127.0.0.1:" + silent.getLocalPort() + "/test?user=postgres";
        long start = System.nanoTime();
        Cli.Result r = Cli.run("status", "--jdbc-url", url);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
        assertThat(r.err())
            .as(r.toString())
            .isEqualTo(
                "relay status: database unavailable: 127.0.0.1:"
                    + silent.getLocalPort()
                    + " accepted the connection but did not answer within the login timeout"
                    + " (loginTimeout, 10 s unless the URL names it)\n");
        assertThat(took).as("returned after").isLessThan(Duration.ofSeconds(60));
        assertThat(held).as("the command reached the silent server").isNotEmpty();
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
    }

    @Test
    void everyCommandPrintsTheRelayVersion() {
      List<String> commands =
          new ArrayList<>(RelayCommand.newCommandLine().getSubcommands().keySet());
      commands.remove("help");
      for (int i = 0; i < commands.size(); i++) {
        Cli.Result r = Cli.run(commands.get(i), i % 2 == 0 ? "-V" : "--version");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out()).as(r.toString()).isEqualTo("relay " + Relay.version() + "\n");
      }
    }

    /** `relay help -V` printed the usage; it prints the version, as `relay -V` does. */
    @Test
    void helpPrintsTheVersionForVersionToo() {
      for (String flag : new String[] {"-V", "--version"}) {
        Cli.Result r = Cli.run("help", flag);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out()).as(r.toString()).isEqualTo("relay " + Relay.version() + "\n");
      }
    }

    /**
     * `relay help nosuch` said picocli's "Unknown subcommand 'nosuch'."; it answers as `relay
     * nosuch` does, with the likely command and the list.
     */
    @Test
    void helpOfAnUnknownCommandAnswersAsTheUnknownCommandDoes() {
      for (String name : new String[] {"nosuch", "stauts"}) {
        Cli.Result help = Cli.run("help", name);
        Cli.Result direct = Cli.run(name);
        assertThat(help.exitCode()).as(help.toString()).isEqualTo(2);
        assertThat(help.err()).as(help.toString()).isEqualTo(direct.err());
        assertThat(help.err()).startsWith("relay: unknown command '" + name + "'");
      }
    }

    @Test
    void unreachableDatabaseFromTheEnvironmentIsExitThreeToo() {
      Cli.Result r =
          Cli.run(java.util.Map.of("RELAY_JDBC_URL", UNREACHABLE), "list", "--state", "failed");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
      assertThat(r.err().lines()).hasSize(1);
    }

    /**
     * {@code --jdbc-url "$UNSET"} names a database the shell failed to give: refused (exit 2)
     * naming where it came from, never the embedded database (which a migrate or an enqueue would
     * write to, exit 0), whatever RELAY_JDBC_URL says; an empty variable is refused the same way.
     */
    @Test
    void anEmptyJdbcUrlIsAUsageErrorNotTheEmbeddedDatabase(TestDatabase db) {
      for (String empty : new String[] {"", "  "}) {
        Cli.Result r =
            Cli.run(
                java.util.Map.of("RELAY_JDBC_URL", db.jdbcUrl()), "migrate", "--jdbc-url", empty);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err())
            .startsWith("relay migrate: --jdbc-url is empty: give a PostgreSQL JDBC URL like ")
            .contains("or leave --jdbc-url out")
            .doesNotContain("embedded PostgreSQL 18 on");
        assertThat(r.out()).isEmpty();
      }
      Cli.Result fromEnv =
          Cli.run(
              java.util.Map.of("RELAY_JDBC_URL", ""),
              "enqueue",
              "--id",
              "a",
              "--kind",
              "k",
              "--payload",
              "{}");
      assertThat(fromEnv.exitCode()).as(fromEnv.toString()).isEqualTo(2);
      assertThat(fromEnv.err())
          .startsWith("relay enqueue: env RELAY_JDBC_URL is empty")
          .contains("or unset RELAY_JDBC_URL")
          .doesNotContain("embedded PostgreSQL 18 on");
      Cli.Result demo = Cli.run("demo", "--jdbc-url", "");
      assertThat(demo.exitCode()).as(demo.toString()).isEqualTo(2);
      assertThat(demo.err()).startsWith("relay demo: --jdbc-url is empty");
    }

    @Test
    void verboseAddsTheStackTrace() {
      Cli.Result r = Cli.run("migrate", "--jdbc-url", UNREACHABLE, "--verbose");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(3);
      assertThat(r.err()).contains("\tat ");
    }

    @Test
    void anEditedMigrationIsRefusedInOneLineByMigrateAndByEveryCommand(TestDatabase db)
        throws Exception {
      String edited = db.schema() + "_edited";
      try {
        dev.relay.Migrator.migrate(db.dataSource(), edited);
        db.execute("UPDATE " + edited + ".schema_version SET checksum = 'feed' WHERE version = 3");
        for (String command : new String[] {"migrate", "status"}) {
          Cli.Result r = Cli.run(command, "--jdbc-url", db.jdbcUrl(), "--schema", edited);
          assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
          assertThat(r.err().lines()).as(r.toString()).hasSize(1);
          assertThat(r.err())
              .startsWith("relay " + command + ": schema " + edited + " recorded version 3")
              .contains("checksum feed")
              .doesNotContain("\tat ");
        }
        assertThat(
                db.queryString(
                    "SELECT checksum FROM " + edited + ".schema_version WHERE version = 3"))
            .isEqualTo("feed");
      } finally {
        db.execute("DROP SCHEMA IF EXISTS " + edited + " CASCADE");
      }
    }

    @Test
    void anUnmigratedSchemaIsRefusedWithTheWayOut(TestDatabase db) {
      Cli.Result r = Cli.run("status", "--jdbc-url", db.jdbcUrl(), "--schema", "relay_never_made");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err()).contains("is not migrated").contains("relay migrate");
    }
  }

  @Nested
  class Help {
    @Test
    void topLevelHelpListsEveryCommandAndTheExitCodes() {
      Cli.Result r = Cli.run("--help");
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out())
          .contains(
              "migrate",
              "status",
              "list",
              "show",
              "enqueue",
              "redrive",
              "supersede",
              "cancel",
              "purge",
              "demo",
              "`relay serve`",
              "`relay passwd`")
          .contains("Exit codes:")
          .contains("database unavailable");
    }

    @Test
    void benchAndFaultsHelpNameTheRealCommandAndItsValues() {
      for (String main :
          new String[] {"dev.relay.bench.BenchCommand", "dev.relay.faults.FaultsCommand"}) {
        Cli.Result r = Cli.runMain(main, Cli.SLF4J_SIMPLE, java.util.Map.of(), "--help");
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out()).as(r.toString()).contains("\nUsage: relay ").doesNotContain("=<");
      }
    }

    @Test
    void demoHelpReadsAsTheOtherCommandsDo() {
      Cli.Result r = Cli.run("demo", "--help");
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("--jdbc-url=URL").doesNotContain("<jdbcUrl>");
      // Paragraphs wrapped by picocli: no line of the first ends short, mid-sentence.
      List<String> lines = r.out().lines().toList();
      int from =
          lines.indexOf(lines.stream().filter(l -> l.startsWith("Usage:")).findFirst().get());
      List<String> paragraph = lines.subList(from + 1, lines.indexOf(""));
      assertThat(paragraph).hasSizeGreaterThan(1);
      assertThat(paragraph.subList(0, paragraph.size() - 1)).allMatch(l -> l.length() >= 60);
    }

    @Test
    void subcommandHelpNamesItsOptionsAndExitCodes() {
      Cli.Result r = Cli.run("help", "enqueue");
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("--jdbc-url", "--schema", "--payload-file", "Exit codes:");
    }
  }

  @Nested
  class Migrate {
    @Test
    void migratesAFreshSchemaThenFindsItCurrent(TestDatabase db) throws Exception {
      String schema = db.schema() + "_m";
      try {
        Cli.Result first = Cli.run("migrate", "--jdbc-url", db.jdbcUrl(), "--schema", schema);
        assertThat(first.exitCode()).as(first.toString()).isZero();
        assertThat(first.out()).contains("schema " + schema + " migrated from version 0 to");
        Cli.Result again = Cli.run("migrate", "--jdbc-url", db.jdbcUrl(), "--schema", schema);
        assertThat(again.exitCode()).as(again.toString()).isZero();
        assertThat(again.out()).contains(": current");
      } finally {
        db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      }
    }
  }

  @Nested
  class Enqueue {
    @Test
    void enqueuesFromOptions(TestDatabase db) throws Exception {
      Cli.Result r =
          Cli.run(
              on(
                  db,
                  "enqueue",
                  "--id",
                  "order-103-ack",
                  "--kind",
                  "order_received",
                  "--payload",
                  "{\"order_id\": 103, \"total\": 29.00}",
                  "--queue",
                  "mail",
                  "--max-attempts",
                  "5"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("enqueued order-103-ack");
      assertThat(
              db.queryString(
                  "SELECT kind || ' ' || queue || ' ' || max_attempts || ' ' || state"
                      + " FROM {schema}.work WHERE work_id = 'order-103-ack'"))
          .isEqualTo("order_received mail 5 ready");
    }

    @Test
    void aRepeatIsAlreadyEnqueuedAndAChangedPayloadIsRefused(TestDatabase db) {
      String[] args =
          on(db, "enqueue", "--id", "w-1", "--kind", "k", "--payload", "{\"total\": 29.00}");
      assertThat(Cli.run(args).exitCode()).isZero();
      Cli.Result repeat =
          Cli.run(on(db, "enqueue", "--id", "w-1", "--kind", "k", "--payload", "{\"total\":29.0}"));
      assertThat(repeat.exitCode()).as(repeat.toString()).isZero();
      assertThat(repeat.out()).contains("already enqueued");
      Cli.Result changed =
          Cli.run(on(db, "enqueue", "--id", "w-1", "--kind", "k", "--payload", "{\"total\": 30}"));
      assertThat(changed.exitCode()).as(changed.toString()).isEqualTo(1);
      assertThat(changed.err()).contains("w-1").doesNotContain("\tat ");
    }

    @Test
    void aFileIsOneTransaction(TestDatabase db, @TempDir Path dir) throws Exception {
      db.execute(
          "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('taken', 'k', '{\"a\":1}')");
      Path bad = dir.resolve("bad.json");
      Files.writeString(
          bad,
          "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {\"n\": 1}},"
              + " {\"work_id\": \"taken\", \"kind\": \"k\", \"payload\": {\"a\": 2}}]");
      Cli.Result refused = Cli.run(on(db, "enqueue", "--file", bad.toString()));
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id = 'f-1'")).isZero();

      Path good = dir.resolve("good.json");
      Files.writeString(
          good,
          "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {\"n\": 1}, \"priority\": 5},"
              + " {\"work_id\": \"f-2\", \"kind\": \"k\", \"payload\": [1, 2], \"delay\": \"1h\"}]");
      Cli.Result ok = Cli.run(on(db, "enqueue", "--file", good.toString(), "--json"));
      assertThat(ok.exitCode()).as(ok.toString()).isZero();
      assertThat(ok.out()).contains("\"enqueued\":2");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id LIKE 'f-%'"))
          .isEqualTo(2);
    }

    @Test
    void aConflictSaysWhatACommandLineUserDoes(TestDatabase db) {
      assertThat(
              Cli.run(on(db, "enqueue", "--id", "w-1", "--kind", "k", "--payload", "{}"))
                  .exitCode())
          .isZero();
      Cli.Result changed =
          Cli.run(on(db, "enqueue", "--id", "w-1", "--kind", "k", "--payload", "{\"n\": 1}"));
      assertThat(changed.exitCode()).as(changed.toString()).isEqualTo(1);
      assertThat(changed.err())
          .contains("nothing was enqueued: a corrected intention needs a new work ID")
          .doesNotContain("roll back");
    }

    @Test
    void errorsInStandardInputNameItAndTheItem(TestDatabase db) throws Exception {
      Cli.Result noPayload =
          Cli.runWithInput(
              java.util.Map.of(),
              "{\"work_id\": \"in-1\", \"kind\": \"k\"}",
              on(db, "enqueue", "--file", "-"));
      assertThat(noPayload.exitCode()).as(noPayload.toString()).isEqualTo(2);
      assertThat(noPayload.err())
          .startsWith("relay enqueue: item 1 of standard input has no payload");
      Cli.Result twice =
          Cli.runWithInput(
              java.util.Map.of(),
              "[{\"work_id\": \"a\", \"kind\": \"k\", \"payload\": {}},"
                  + " {\"work_id\": \"b\", \"kind\": \"k\", \"payload\": {}},"
                  + " {\"work_id\": \"a\", \"kind\": \"k\", \"payload\": {}}]",
              on(db, "enqueue", "--file", "-"));
      assertThat(twice.exitCode()).as(twice.toString()).isEqualTo(2);
      assertThat(twice.err())
          .startsWith(
              "relay enqueue: items 1 and 3 of standard input both have work_id 'a'; one enqueue"
                  + " takes each work ID once");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }

    @Test
    void readsAnArrayFromStandardInput(TestDatabase db) throws Exception {
      Cli.Result r =
          Cli.runWithInput(
              java.util.Map.of(),
              "[{\"work_id\": \"in-1\", \"kind\": \"k\", \"payload\": {}},"
                  + " {\"work_id\": \"in-2\", \"kind\": \"k\", \"payload\": \"text\"}]",
              on(db, "enqueue", "--file", "-"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).contains("2 enqueued, 0 already enqueued, in one transaction");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(2);
    }

    @Test
    void badInputIsAUsageError(TestDatabase db, @TempDir Path dir) throws Exception {
      Cli.Result noKind = Cli.run(on(db, "enqueue", "--id", "x", "--payload", "{}"));
      assertThat(noKind.exitCode()).as(noKind.toString()).isEqualTo(2);
      Cli.Result notJson =
          Cli.run(on(db, "enqueue", "--id", "x", "--kind", "k", "--payload", "{not json"));
      assertThat(notJson.exitCode()).as(notJson.toString()).isEqualTo(2);
      assertThat(notJson.err()).contains("payload");
      Path file = dir.resolve("typo.json");
      Files.writeString(file, "{\"work_id\": \"x\", \"knd\": \"k\", \"payload\": {}}");
      Cli.Result typo = Cli.run(on(db, "enqueue", "--file", file.toString()));
      assertThat(typo.exitCode()).as(typo.toString()).isEqualTo(2);
      assertThat(typo.err()).contains("knd");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }

    /**
     * A file that is not JSON is refused in plain words with where, not Jackson's internals ({@code
     * [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); ...]}).
     */
    @Test
    void aFileThatIsNotJsonIsNamedWithItsLineAndColumn(@TempDir Path dir) throws Exception {
      Path unclosed = dir.resolve("t.json");
      Files.writeString(unclosed, "{\n");
      Cli.Result r = Cli.run("enqueue", "--file", unclosed.toString(), "--jdbc-url", UNREACHABLE);
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err())
          .as(r.toString())
          .startsWith(
              "relay enqueue: "
                  + unclosed
                  + " is not JSON at line 2, column 1: Unexpected end-of-input: expected close"
                  + " marker for Object (opened at line 1, column 1)\n")
          .doesNotContain("Source")
          .doesNotContain("REDACTED")
          .doesNotContain("StreamReadFeature");
      Path typo = dir.resolve("typo.json");
      Files.writeString(typo, "[{\"work_id\": \"a\"},\n {work_id: 1}]");
      Cli.Result second = Cli.run("enqueue", "--file", typo.toString(), "--jdbc-url", UNREACHABLE);
      assertThat(second.exitCode()).as(second.toString()).isEqualTo(2);
      assertThat(second.err())
          .as(second.toString())
          .startsWith("relay enqueue: " + typo + " is not JSON at line 2, column 3: Unexpected")
          .doesNotContain("Source");
    }

    @Test
    void fileItemsNameTheirDependenciesAndGroup(TestDatabase db, @TempDir Path dir)
        throws Exception {
      Path file = dir.resolve("order.json");
      Files.writeString(
          file,
          "[{\"work_id\": \"o-charge\", \"kind\": \"k\", \"payload\": {}, \"group\": \"c-7\"},"
              + " {\"work_id\": \"o-ship\", \"kind\": \"k\", \"payload\": {},"
              + " \"depends_on\": [\"o-charge\"]}]");
      Cli.Result r = Cli.run(on(db, "enqueue", "--file", file.toString()));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(db.queryString("SELECT group_key FROM {schema}.work WHERE work_id = 'o-charge'"))
          .isEqualTo("c-7");
      assertThat(
              db.queryString("SELECT depends_on FROM {schema}.dependency WHERE work_id = 'o-ship'"))
          .isEqualTo("o-charge");
      Cli.Result show = Cli.run(on(db, "show", "o-ship"));
      assertThat(show.out()).as(show.toString()).contains("depends_on           o-charge (ready)");
    }

    @Test
    void fileItemsAreNumberedFromOneAndAMissingDependencyWritesNothing(
        TestDatabase db, @TempDir Path dir) throws Exception {
      Path file = dir.resolve("bad.json");
      Files.writeString(
          file,
          "[{\"work_id\": \"d-1\", \"kind\": \"k\", \"payload\": {}},"
              + " {\"work_id\": \"d-2\", \"kind\": \"k\", \"payload\": {}, \"depends_on\": \"d-1\"}]");
      Cli.Result notArray = Cli.run(on(db, "enqueue", "--file", file.toString()));
      assertThat(notArray.exitCode()).as(notArray.toString()).isEqualTo(2);
      assertThat(notArray.err()).contains("item 2 of").contains("depends_on as an array");
      Files.writeString(
          file,
          "[{\"work_id\": \"d-1\", \"kind\": \"k\", \"payload\": {}},"
              + " {\"work_id\": \"d-2\", \"kind\": \"k\", \"payload\": {},"
              + " \"depends_on\": [\"nowhere\"]}]");
      Cli.Result unknown = Cli.run(on(db, "enqueue", "--file", file.toString()));
      assertThat(unknown.exitCode()).as(unknown.toString()).isEqualTo(1);
      assertThat(unknown.err()).contains("nowhere");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }

    @Test
    void errorsNameTheOptionNotTheLibrarysName(TestDatabase db) {
      Cli.Result purge = Cli.run(on(db, "purge", "--retention", "1s"));
      assertThat(purge.exitCode()).as(purge.toString()).isEqualTo(2);
      assertThat(purge.err())
          .startsWith("relay purge: --retention must be between 1m and 36500d, was 1s\n")
          .doesNotContain("workRetention");
      Cli.Result zero = Cli.run(on(db, "purge", "--retention", "0s"));
      assertThat(zero.err())
          .startsWith("relay purge: --retention must be between 1m and 36500d, was 0s\n");
      Cli.Result days = Cli.run(on(db, "purge", "--retention", "0d", "--dry-run"));
      assertThat(days.err())
          .as("the value as typed")
          .startsWith("relay purge: --retention must be between 1m and 36500d, was 0d\n");
      Cli.Result after = Cli.run(on(db, "list", "--after", "nonsense"));
      assertThat(after.exitCode()).as(after.toString()).isEqualTo(2);
      assertThat(after.err()).contains("--after").doesNotContain("pass null");
      Cli.Result deadline =
          Cli.run(
              on(
                  db,
                  "enqueue",
                  "--id",
                  "a",
                  "--kind",
                  "k",
                  "--payload",
                  "{}",
                  "--deadline",
                  "yesterday"));
      assertThat(deadline.exitCode()).as(deadline.toString()).isEqualTo(2);
      assertThat(deadline.err())
          .contains("--deadline")
          .contains("ISO-8601 instant like 2026-01-31T12:00:00Z")
          .doesNotContain("DateTimeParseException");
      Cli.Result url = Cli.run("status", "--jdbc-url", "not-a-url");
      assertThat(url.exitCode()).as(url.toString()).isEqualTo(2);
      assertThat(url.err()).startsWith("relay status: --jdbc-url must be a PostgreSQL JDBC URL");
      assertThat(url.err().lines()).hasSize(2);
    }
  }
}
