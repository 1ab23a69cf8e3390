package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every command the {@code relay} script runs answers the same way: {@code --help} and {@code relay
 * help COMMAND} print its own options with exit 0, an unknown flag, a missing required option and a
 * bad value are usage errors (exit 2) of at most three lines on stderr, and none of them starts or
 * writes anything: no embedded database under the home directory or the temporary directory, no
 * schema in the database that {@code RELAY_JDBC_URL} names.
 *
 * <p>Each call goes through the real {@code ./relay} script's routing (run with a {@code java} on
 * the PATH that prints what it would run), then runs that module's entry point as a process on this
 * test's class path, where relay-serve, relay-bench and relay-faults are test dependencies.
 */
@RelayDatabaseTest
class CommandConformanceTest {
  /** The database RELAY_JDBC_URL names for every call; it must stay without a schema. */
  private static final String PROBE_DATABASE = "relay_cli_conformance";

  /**
   * One command: arguments that lack a required option or parameter (none if nothing is required)
   * and the name the error must give, and a bad value with the option the error must name.
   */
  record Case(
      String command,
      List<String> missing,
      String missingName,
      List<String> bad,
      String badOption) {
    @Override
    public String toString() {
      return command;
    }
  }

  static Stream<Case> commands() {
    return Stream.of(
        new Case("demo", List.of(), null, List.of("--jdbc-url", "not-a-url"), "--jdbc-url"),
        new Case("migrate", List.of(), null, List.of("--schema", "Bad-Name"), "--schema"),
        new Case("status", List.of(), null, List.of("--window", "soon"), "--window"),
        new Case("list", List.of(), null, List.of("--limit", "many"), "--limit"),
        new Case(
            "show", List.of("show"), "ID", List.of("x", "--jdbc-url", "not-a-url"), "--jdbc-url"),
        new Case(
            "enqueue",
            List.of("enqueue", "--kind", "k", "--payload", "{}"),
            "--id",
            List.of("--id", "a", "--kind", "k", "--payload", "{}", "--deadline", "yesterday"),
            "--deadline"),
        new Case(
            "redrive",
            List.of("redrive", "x", "--reason", "r"),
            "--actor",
            List.of("x", "--actor", "a", "--reason", "r", "--limit", "lots"),
            "--limit"),
        new Case(
            "supersede",
            List.of("supersede", "x", "--kind", "k", "--actor", "a", "--reason", "r"),
            "--new-id",
            List.of(
                "x",
                "--new-id",
                "y",
                "--kind",
                "k",
                "--payload",
                "{not json",
                "--actor",
                "a",
                "--reason",
                "r"),
            "--payload"),
        new Case(
            "cancel",
            List.of("cancel", "x", "--actor", "a"),
            "--reason",
            List.of("x", "--actor", "a", "--reason", "r", "--limit", "lots"),
            "--limit"),
        new Case(
            "pause",
            List.of("pause", "--kind", "k", "--actor", "a"),
            "--reason",
            List.of("--kind", "k", "--actor", "a", "--reason", "r", "--for", "a while"),
            "--for"),
        new Case(
            "resume",
            List.of("resume", "--kind", "k", "--reason", "r"),
            "--actor",
            List.of("--kind", "k", "--actor", "a", "--reason", "r", "--schema", "Bad-Name"),
            "--schema"),
        new Case("purge", List.of(), null, List.of("--retention", "1s"), "--retention"),
        new Case("schedules", List.of(), null, List.of("--schema", "Bad-Name"), "--schema"),
        new Case(
            "serve",
            List.of("serve"),
            "--config",
            List.of("--config", "x.json", "--port", "web"),
            "--port"),
        new Case("passwd", List.of("passwd"), "password", List.of(), null),
        new Case("bench", List.of(), null, List.of("--jobs", "lots"), "--jobs"),
        new Case("faults", List.of(), null, List.of("--minutes", "ages"), "--minutes"));
  }

  @Test
  void everyCommandOfTheRelayCommandAndOfTheScriptIsWalked() {
    Set<String> known = new TreeSet<>(RelayCommand.newCommandLine().getSubcommands().keySet());
    known.remove("help");
    known.addAll(RelayCommand.ROUTED.keySet());
    Set<String> walked =
        commands().map(Case::command).collect(Collectors.toCollection(TreeSet::new));
    assertThat(walked).isEqualTo(known);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("commands")
  void helpPrintsTheCommandsOwnOptionsWithExitZero(Case c, TestDatabase db) {
    for (List<String> args :
        List.of(List.of(c.command(), "--help"), List.of("help", c.command()))) {
      Run r = relay(db, args);
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out()).as(r.toString()).contains("Usage:").contains(" " + c.command());
      assertThat(r.out()).as(r.toString()).contains("--help");
      assertThat(r.err()).as(r.toString()).isEmpty();
      r.assertNothingWritten();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("commands")
  void anUnknownFlagIsAShortUsageError(Case c, TestDatabase db) {
    Run r = relay(db, List.of(c.command(), "--no-such-flag"));
    r.assertUsageError(c.command(), "--no-such-flag");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("commands")
  void aMissingRequiredOptionIsAShortUsageError(Case c, TestDatabase db) {
    if (c.missing().isEmpty()) {
      return; // the command requires nothing
    }
    Run r = relay(db, c.missing());
    r.assertUsageError(c.command(), c.missingName());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("commands")
  void aBadValueIsAShortUsageErrorNamingTheOption(Case c, TestDatabase db) {
    if (c.badOption() == null) {
      return; // the command takes no values
    }
    List<String> args = new ArrayList<>();
    args.add(c.command());
    args.addAll(c.bad());
    Run r = relay(db, args);
    r.assertUsageError(c.command(), c.badOption());
  }

  @Test
  void relayAlonePrintsTheUsageWithExitTwo(TestDatabase db) {
    Run r = relay(db, List.of());
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).as(r.toString()).contains("Usage:", "serve", "passwd", "bench", "faults");
    r.assertNothingWritten();
  }

  @Test
  void aLongValueIsNotEchoedWhole(TestDatabase db) {
    String kind = "k".repeat(10_000);
    Cli.Result bad =
        Cli.run(CommandLineTest.on(db, "enqueue", "--id", "a", "--kind", kind, "--payload", "{}"));
    assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    assertThat(bad.err()).as(bad.toString()).startsWith("relay enqueue: invalid work 'a': --kind");
    assertThat(bad.err()).as(bad.toString()).doesNotContain(kind).contains("… (10000 characters)");
    assertThat(bad.err().lines()).as(bad.toString()).hasSize(2);
    Cli.Result longId = Cli.run(CommandLineTest.on(db, "show", kind));
    assertThat(longId.exitCode()).as(longId.toString()).isEqualTo(2);
    assertThat(longId.err()).as(longId.toString()).doesNotContain(kind);
    assertThat(longId.err().lines().findFirst())
        .as(longId.toString())
        .contains("relay show: ID has 10000 characters; the limit is 200");
  }

  @Test
  void theScriptRoutesHelpToTheModuleThatRunsTheCommand(@TempDir Path dir) {
    Launcher launcher = new Launcher(dir);
    assertThat(launcher.route(List.of("help", "serve")))
        .containsExactly("relay-serve", "serve", "--help");
    assertThat(launcher.route(List.of("help", "passwd")))
        .containsExactly("relay-serve", "passwd", "--help");
    assertThat(launcher.route(List.of("help", "bench"))).containsExactly("relay-bench", "--help");
    assertThat(launcher.route(List.of("help", "faults"))).containsExactly("relay-faults", "--help");
    assertThat(launcher.route(List.of("help", "status")))
        .containsExactly("relay-app", "help", "status");
    assertThat(launcher.route(List.of("faults", "--seed", "4")))
        .containsExactly("relay-faults", "--seed", "4");
  }

  @Test
  void theScriptStartsServeFromItsClassDataArchiveOnceThereIsOne(@TempDir Path dir)
      throws IOException {
    Launcher launcher = new Launcher(dir);
    // No archive can be made from an empty jar: serve starts from its jar, as every module does.
    assertThat(launcher.route(List.of("serve", "--help")))
        .containsExactly("relay-serve", "serve", "--help");
    assertThat(launcher.options).isEmpty();
    // A built jar and the archive made from it (by the first `relay serve` after the build).
    Path target = dir.resolve("relay-serve").resolve("target");
    Path jar = target.resolve("relay-serve-0.1.0-SNAPSHOT-all.jar");
    Files.writeString(jar, "not empty");
    Path app = Files.createDirectories(target.resolve("cds").resolve("app"));
    Files.writeString(app.resolve(jar.getFileName().toString()), "extracted");
    Path archive = Files.writeString(target.resolve("cds").resolve("relay-serve.jsa"), "jsa");
    assertThat(archive.toFile().setLastModified(jar.toFile().lastModified() + 60_000)).isTrue();
    assertThat(launcher.route(List.of("serve", "--config", "a.yml")))
        .containsExactly("relay-serve", "serve", "--config", "a.yml");
    assertThat(launcher.options).startsWith("-XX:SharedArchiveFile=" + archive);
  }

  /**
   * Help, version and --print-config start nothing, so they do not make the class-data archive
   * (some 20 s, once per build): only a start of serve does.
   */
  @Test
  void theScriptPreparesServesArchiveOnlyForAStartOfServe(@TempDir Path dir) throws IOException {
    Launcher launcher = new Launcher(dir);
    Path target = dir.resolve("relay-serve").resolve("target");
    Files.writeString(target.resolve("relay-serve-0.1.0-SNAPSHOT-all.jar"), "not empty");
    Path cds = target.resolve("cds");
    for (List<String> args :
        List.of(
            List.of("serve", "--config", "a.yml", "--print-config"),
            List.of("serve", "--print-config"),
            List.of("serve", "--help"),
            List.of("serve", "-h"),
            List.of("serve", "-V"),
            List.of("serve", "--version"))) {
      assertThat(launcher.route(args))
          .as(args.toString())
          .containsExactlyElementsOf(
              Stream.concat(Stream.of("relay-serve"), args.stream()).toList());
      assertThat(launcher.options).as(args.toString()).isEmpty();
      assertThat(cds).as(args.toString()).doesNotExist();
    }
    launcher.route(List.of("serve", "--config", "a.yml"));
    assertThat(launcher.options)
        .as("a start of serve prepares the archive")
        .containsExactly("relay: preparing relay serve's class-data archive (once per build) ...");
    assertThat(cds.resolve("training.yml")).exists();
  }

  // --- running the script's routing, then the module's entry point

  private static final Map<String, String> MAIN_CLASS =
      Map.of(
          "relay-app", "dev.relay.app.RelayCommand",
          "relay-serve", "dev.relay.serve.ServeMain",
          "relay-bench", "dev.relay.bench.BenchCommand",
          "relay-faults", "dev.relay.faults.FaultsCommand");

  /** Each call's directories (home, temporary, script), removed after the class. */
  private static final List<Path> ROOTS = new CopyOnWriteArrayList<>();

  @AfterAll
  static void removeTheCallsDirectories() throws IOException {
    for (Path root : ROOTS) {
      try (Stream<Path> all = Files.walk(root)) {
        for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
  }

  private Run relay(TestDatabase db, List<String> args) {
    String url = probeDatabase(db);
    try {
      Path root = Files.createTempDirectory("relay-conformance-");
      ROOTS.add(root);
      Path home = Files.createDirectory(root.resolve("home"));
      Path tmp = Files.createDirectory(root.resolve("tmp"));
      List<String> routed = new Launcher(Files.createDirectory(root.resolve("script"))).route(args);
      String module = routed.get(0);
      List<String> jvm =
          new ArrayList<>(
              List.of("-Duser.home=" + home, "-Djava.io.tmpdir=" + tmp, "-XX:-UsePerfData"));
      if (!module.equals("relay-serve")) {
        jvm.addAll(Cli.SLF4J_SIMPLE);
      }
      Cli.Result r =
          Cli.runMain(
              MAIN_CLASS.get(module),
              jvm,
              Map.of("RELAY_JDBC_URL", url),
              routed.subList(1, routed.size()).toArray(String[]::new));
      return new Run(args, r, home, tmp, url);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The ./relay script in a directory of empty jars, with a java that prints what it would run. */
  static final class Launcher {
    private final Path root;

    /** The JVM options of the last {@link #route}, before {@code -jar}. */
    List<String> options = List.of();

    Launcher(Path root) {
      this.root = root;
      try {
        Path script = Path.of(System.getProperty("user.dir")).getParent().resolve("relay");
        Files.copy(script, root.resolve("relay"));
        for (String module : MAIN_CLASS.keySet()) {
          Path target = Files.createDirectories(root.resolve(module).resolve("target"));
          Files.createFile(target.resolve(module + "-0.1.0-SNAPSHOT-all.jar"));
        }
        Path java = Files.createDirectories(root.resolve("bin")).resolve("java");
        Files.writeString(java, "#!/bin/sh\nprintf '%s\\n' \"$@\"\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** The module whose jar the script runs for {@code args}, then the arguments it passes. */
    List<String> route(List<String> args) {
      List<String> command = new ArrayList<>(List.of("bash", root.resolve("relay").toString()));
      command.addAll(args);
      ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
      pb.environment().put("PATH", root.resolve("bin") + ":" + System.getenv("PATH"));
      pb.environment().remove("RELAY_JAVA_OPTS");
      try {
        Process p = pb.start();
        String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(printed).isZero();
        List<String> lines = printed.lines().toList();
        int jarAt = lines.indexOf("-jar");
        assertThat(jarAt).as(printed).isGreaterThanOrEqualTo(0);
        options = lines.subList(0, jarAt);
        Path jar = Path.of(lines.get(jarAt + 1));
        List<String> routed = new ArrayList<>();
        // target/MODULE-...-all.jar, or target/cds/app/MODULE-...-all.jar (relay serve's archive)
        routed.add(jar.getFileName().toString().replace("-0.1.0-SNAPSHOT-all.jar", ""));
        routed.addAll(lines.subList(jarAt + 2, lines.size()));
        return routed;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /** One call's result, and the places it must have left untouched. */
  record Run(List<String> args, Cli.Result result, Path home, Path tmp, String url) {
    int exitCode() {
      return result.exitCode();
    }

    String out() {
      return result.out();
    }

    String err() {
      return result.err();
    }

    void assertUsageError(String command, String option) {
      assertThat(exitCode()).as(toString()).isEqualTo(2);
      List<String> lines = err().lines().toList();
      assertThat(lines).as(toString()).hasSizeBetween(1, 3);
      assertThat(lines.get(0))
          .as(toString())
          .startsWith("relay " + command + ": ")
          .contains(option);
      assertThat(err()).as(toString()).contains("see relay help " + command);
      assertThat(err()).as(toString()).doesNotContain("Exception").doesNotContain("\tat ");
      assertNothingWritten();
    }

    void assertNothingWritten() {
      try (Stream<Path> inHome = Files.list(home);
          Stream<Path> inTmp = Files.list(tmp)) {
        assertThat(inHome.toList()).as("written under user.home: " + this).isEmpty();
        assertThat(inTmp.toList()).as("written under java.io.tmpdir: " + this).isEmpty();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      assertThat(schemas(url)).as("schemas created by " + this).isEmpty();
    }

    @Override
    public String toString() {
      return "relay " + String.join(" ", args) + "\n" + result;
    }
  }

  // --- the probe database

  private static String probeUrl;

  /** A database of its own (created once), so that any schema in it was made by a call here. */
  private static synchronized String probeDatabase(TestDatabase db) {
    if (probeUrl == null) {
      try (Connection c = db.connection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(true);
        s.execute("DROP DATABASE IF EXISTS " + PROBE_DATABASE);
        s.execute("CREATE DATABASE " + PROBE_DATABASE);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      String url = db.jdbcUrl();
      String base = "/" + db.database();
      int at = url.indexOf(base, url.indexOf("//") + 2);
      probeUrl = url.substring(0, at) + "/" + PROBE_DATABASE + url.substring(at + base.length());
    }
    return probeUrl;
  }

  private static List<String> schemas(String url) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%'"
                    + " AND nspname NOT IN ('public', 'information_schema')")) {
      List<String> names = new ArrayList<>();
      while (rs.next()) {
        names.add(rs.getString(1));
      }
      return names;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
