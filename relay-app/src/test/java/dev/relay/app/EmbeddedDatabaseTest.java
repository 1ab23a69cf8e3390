package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.EmbeddedServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without a database URL the command starts an embedded PostgreSQL whose data outlives the process
 * ({@code $RELAY_HOME/pgdata}, here a temporary directory), and says so on stderr.
 */
class EmbeddedDatabaseTest {
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
          .contains("another relay process runs on " + pgdata)
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
