package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.EmbeddedServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without a database URL the command starts an embedded PostgreSQL whose data outlives the process
 * ({@code $RELAY_HOME/pgdata}, here a temporary directory), and says so on stderr.
 */
class EmbeddedDatabaseTest {
  /** Starts a server on the directory in args[0], says ready, and waits to be killed. */
  public static void main(String[] args) throws Exception {
    EmbeddedServer.builder().dataDirectory(Path.of(args[0])).start();
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE); // until killed: the server is never closed here
  }

  /**
   * A server left running by a process killed with {@code kill -9} is orphaned: a command neither
   * claims another relay process runs it nor hangs on its lock; it stops it and starts its own.
   */
  @Test
  void aCommandTakesOverTheServerOfAKilledProcess(@TempDir Path home) throws Exception {
    Path pgdata = home.resolve("pgdata");
    List<String> cmd =
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            EmbeddedDatabaseTest.class.getName(),
            pgdata.toString());
    Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = out.readLine()) != null && !line.equals("ready")) {
        // zonky's log
      }
      assertThat(line).as("the child started its server").isNotNull();
      child.destroyForcibly(); // SIGKILL
      assertThat(child.waitFor(2, TimeUnit.MINUTES)).isTrue();
    } finally {
      child.destroyForcibly();
    }
    assertThat(EmbeddedServer.runningIn(pgdata)).as("orphaned").isPresent();

    Cli.Result migrate = Cli.run(Map.of("RELAY_HOME", home.toString()), "migrate");
    assertThat(migrate.exitCode()).as(migrate.toString()).isZero();
    assertThat(migrate.err())
        .contains("stopping the orphaned embedded PostgreSQL")
        .contains("with its data kept in " + pgdata)
        .doesNotContain("another relay process")
        .doesNotContain("that process");
    assertThat(EmbeddedServer.runningIn(pgdata)).as("the command stopped its own").isEmpty();
  }

  @Test
  void workEnqueuedByOneCommandIsThereForTheNext(@TempDir Path home) {
    Map<String, String> env = Map.of("RELAY_HOME", home.toString());
    Cli.Result migrate = Cli.run(env, "migrate");
    assertThat(migrate.exitCode()).as(migrate.toString()).isZero();
    assertThat(migrate.err())
        .contains("embedded PostgreSQL")
        .contains(home.resolve("pgdata").toString());
    assertThat(Files.isRegularFile(home.resolve("pgdata").resolve("PG_VERSION"))).isTrue();

    Cli.Result enqueue =
        Cli.run(env, "enqueue", "--id", "kept-1", "--kind", "k", "--payload", "{\"n\": 1}");
    assertThat(enqueue.exitCode()).as(enqueue.toString()).isZero();

    Cli.Result list = Cli.run(env, "list", "--json");
    assertThat(list.exitCode()).as(list.toString()).isZero();
    assertThat(list.out()).contains("\"work_id\" : \"kept-1\"");
  }

  /**
   * While another process runs the embedded server on the data directory ({@code relay serve}, here
   * this test), a command connects to that server instead of failing on the directory's lock, and
   * leaves it running.
   */
  @Test
  void aCommandUsesTheServerAnotherProcessRunsOnTheDirectory(@TempDir Path home) throws Exception {
    Path pgdata = home.resolve("pgdata");
    try (EmbeddedServer held = EmbeddedServer.builder().dataDirectory(pgdata).start()) {
      Map<String, String> env = Map.of("RELAY_HOME", home.toString());
      Cli.Result migrate = Cli.run(env, "migrate");
      assertThat(migrate.exitCode()).as(migrate.toString()).isZero();
      assertThat(migrate.err())
          .contains("that process " + ProcessHandle.current().pid() + " runs on " + pgdata)
          .contains("127.0.0.1:" + held.port());

      Cli.Result enqueue =
          Cli.run(env, "enqueue", "--id", "shared-1", "--kind", "k", "--payload", "{\"n\": 1}");
      assertThat(enqueue.exitCode()).as(enqueue.toString()).isZero();

      try (Connection c = held.dataSource().getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery("SELECT count(*) FROM relay.outbox WHERE work_id = 'shared-1'")) {
        rs.next();
        assertThat(rs.getLong(1)).as("enqueued into the running server").isEqualTo(1);
      }
    }
  }
}
