package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code relay serve} as a real process: a SIGTERM (what systemd sends to stop a service) stops it
 * cleanly with exit status 0, not the JVM's 143, so the unit needs no {@code SuccessExitStatus}.
 */
@RelayDatabaseTest
class ServeExitTest {
  private static final Pattern EMBEDDED =
      Pattern.compile(
          "relay serve: embedded PostgreSQL at"
              + " (jdbc:postgresql://127\\.0\\.0\\.1:\\d+/postgres\\?user=postgres) while serve runs");
  private static final Pattern HEALTH =
      Pattern.compile("relay serve: (http://127\\.0\\.0\\.1:\\d+)/actuator/health");

  @Test
  void aSigtermStopsServeCleanlyWithExitStatusZero(TestDatabase db, @TempDir Path dir)
      throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n");
    Path out = dir.resolve("out.log");
    Path err = dir.resolve("err.log");
    ProcessBuilder pb =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx384m",
                "-cp",
                System.getProperty("java.class.path"),
                ServeMain.class.getName(),
                "serve",
                "--config",
                config.toString(),
                "--jdbc-url",
                db.jdbcUrl(),
                "--schema",
                db.schema(),
                "--port",
                "0")
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    pb.environment().remove("RELAY_JDBC_URL");
    Process serve = pb.start();
    try {
      String base =
          await()
              .atMost(Duration.ofMinutes(2))
              .until(() -> baseUrl(out, serve), url -> url != null);
      HttpClient http = HttpClient.newHttpClient();
      await()
          .atMost(Duration.ofMinutes(1))
          .until(
              () ->
                  http.send(
                          HttpRequest.newBuilder(URI.create(base + "/actuator/health")).build(),
                          HttpResponse.BodyHandlers.ofString())
                      .body(),
              body -> body.contains("\"UP\""));

      serve.destroy(); // SIGTERM
      assertThat(serve.waitFor(2, TimeUnit.MINUTES)).as("serve stops").isTrue();
      String log = read(out) + read(err);
      assertThat(serve.exitValue()).as(log).isZero();
      assertThat(read(out)).as(log).contains("relay serve: stopped");
      List<String> errors = log.lines().filter(l -> l.contains(" ERROR ")).toList();
      assertThat(errors).as(log).isEmpty();
    } finally {
      serve.destroyForcibly();
    }
  }

  /**
   * A serve whose port is taken exits 1 in one line, and its log shows no failure of what stopped
   * after it: the meters' refresh was once cut off by the pool closing under it, and logged a
   * warning with a RetryableException's stack trace after the clean refusal.
   */
  @Test
  void aServeThatCannotTakeItsPortExitsOneAndLogsNoRefreshFailure(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n");
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      ServeProcess.Result r =
          ServeProcess.run(
              Map.of(),
              "serve",
              "--config",
              config.toString(),
              "--jdbc-url",
              db.jdbcUrl(),
              "--schema",
              db.schema(),
              "--port",
              String.valueOf(taken.getLocalPort()));
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err()).as(r.toString()).contains("relay serve: cannot start: ");
      assertThat(r.out() + r.err())
          .as(r.toString())
          .doesNotContain("relay metrics refresh failed")
          .doesNotContain("RetryableException")
          .doesNotContain("has been closed");
    }
  }

  /**
   * Without a database URL, serve runs on an embedded PostgreSQL (data in $RELAY_HOME/pgdata) and
   * says once where other tools reach it while it runs.
   */
  @Test
  void onTheEmbeddedDatabaseServePrintsItsUrlOnceAndItAnswers(@TempDir Path dir) throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n");
    ServeProcess serve =
        ServeProcess.start(
            Map.of("RELAY_HOME", dir.resolve("home").toString()),
            "serve",
            "--config",
            config.toString(),
            "--migrate",
            "--port",
            "0");
    try {
      String url =
          await()
              .atMost(Duration.ofMinutes(3))
              .until(
                  () -> {
                    assertThat(serve.process().isAlive()).as(serve.err()).isTrue();
                    Matcher m = EMBEDDED.matcher(serve.out());
                    return m.find() ? m.group(1) : null;
                  },
                  found -> found != null);
      assertThat(serve.out().split("embedded PostgreSQL at", -1)).hasSize(2);
      try (Connection c = DriverManager.getConnection(url);
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT max(version) FROM relay.schema_version")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isPositive();
      }
      serve.process().destroy(); // SIGTERM
      assertThat(serve.process().waitFor(2, TimeUnit.MINUTES)).as("serve stops").isTrue();
      assertThat(serve.process().exitValue()).as(serve.out() + serve.err()).isZero();
    } finally {
      serve.process().destroyForcibly();
    }
  }

  /**
   * A serve killed with {@code kill -9} leaves its embedded PostgreSQL running without an owner;
   * the next serve on the same {@code RELAY_HOME} stops that server and starts on the same data,
   * with no manual step, and the schema it migrated is still there.
   */
  @Test
  void aServeKilledWithSigkillStartsAgainOnTheSameEmbeddedData(@TempDir Path dir) throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("application.yml"),
            "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n");
    Map<String, String> home = Map.of("RELAY_HOME", dir.resolve("home").toString());
    Path pgdata = dir.resolve("home").resolve("pgdata");
    ServeProcess first =
        ServeProcess.start(
            home, "serve", "--config", config.toString(), "--migrate", "--port", "0");
    try {
      awaitEmbeddedUrl(first);
      first.process().destroyForcibly(); // SIGKILL: no shutdown hook runs
      assertThat(first.process().waitFor(1, TimeUnit.MINUTES)).as("killed").isTrue();
      assertThat(pgdata.resolve("postmaster.pid")).as("the orphan still runs").exists();

      ServeProcess second =
          ServeProcess.start(home, "serve", "--config", config.toString(), "--port", "0");
      try {
        String url = awaitEmbeddedUrl(second);
        try (Connection c = DriverManager.getConnection(url);
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT max(version) FROM relay.schema_version")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getInt(1)).isPositive();
        }
        second.process().destroy(); // SIGTERM
        assertThat(second.process().waitFor(2, TimeUnit.MINUTES)).as("serve stops").isTrue();
        assertThat(second.process().exitValue()).as(second.out() + second.err()).isZero();
        assertThat(pgdata.resolve("postmaster.pid"))
            .as("its server stopped with it")
            .doesNotExist();
      } finally {
        second.process().destroyForcibly();
      }
    } finally {
      first.process().destroyForcibly();
      stopLeftoverServer(pgdata);
    }
  }

  private static String awaitEmbeddedUrl(ServeProcess serve) {
    return await()
        .atMost(Duration.ofMinutes(3))
        .until(
            () -> {
              assertThat(serve.process().isAlive()).as(serve.out() + serve.err()).isTrue();
              Matcher m = EMBEDDED.matcher(serve.out());
              return m.find() ? m.group(1) : null;
            },
            found -> found != null);
  }

  /** After a failed run, stops a server the test left behind, so no postgres outlives the build. */
  private static void stopLeftoverServer(Path pgdata) throws IOException {
    Path pidFile = pgdata.resolve("postmaster.pid");
    if (Files.exists(pidFile)) {
      long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroy);
    }
  }

  private static String baseUrl(Path out, Process serve) throws IOException {
    assertThat(serve.isAlive()).as("serve is running").isTrue();
    Matcher m = HEALTH.matcher(read(out));
    return m.find() ? m.group(1) : null;
  }

  private static String read(Path p) throws IOException {
    return Files.exists(p) ? Files.readString(p, StandardCharsets.UTF_8) : "";
  }
}
