package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
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
}
