package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The one launcher: durable settings, a kept data directory, its lock, and its log. */
class EmbeddedServerTest {
  @TempDir Path tmp;

  @Test
  void aKeptDataDirectoryIsDurableAndOutlivesTheServer() throws Exception {
    Path dir = tmp.resolve("pgdata");
    try (EmbeddedServer pg =
        EmbeddedServer.builder().dataDirectory(dir).serverConfig("max_connections", "42").start()) {
      assertThat(query(pg.dataSource(), "SHOW fsync")).isEqualTo("on");
      assertThat(query(pg.dataSource(), "SHOW synchronous_commit")).isEqualTo("on");
      assertThat(query(pg.dataSource(), "SHOW full_page_writes")).isEqualTo("on");
      assertThat(query(pg.dataSource(), "SHOW max_connections")).isEqualTo("42");
      assertThat(pg.dataDirectory()).contains(dir.toAbsolutePath());
      assertThat(pg.logFile()).isEqualTo(tmp.resolve("pgdata.log").toAbsolutePath());
      execute(pg.dataSource(), "CREATE TABLE kept (id int); INSERT INTO kept VALUES (7)");

      assertThatThrownBy(() -> EmbeddedServer.builder().dataDirectory(dir).start().close())
          .as("a second server on the same directory")
          .isInstanceOf(IOException.class);
      assertThat(EmbeddedServer.runningIn(dir))
          .as("the running server, as its postmaster.pid names it")
          .contains("jdbc:postgresql://127.0.0.1:" + pg.port() + "/postgres?user=postgres");
    }
    assertThat(EmbeddedServer.runningIn(dir)).as("after the server stopped").isEmpty();
    try (EmbeddedServer again = EmbeddedServer.builder().dataDirectory(dir).start()) {
      assertThat(query(again.dataSource(), "SELECT id::text FROM kept")).isEqualTo("7");
    }
    assertThat(Files.isDirectory(dir)).isTrue();
  }

  @Test
  void aStaleOrUnreadyPostmasterPidNamesNoRunningServer() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("stale"));
    assertThat(EmbeddedServer.runningIn(dir)).as("no postmaster.pid").isEmpty();
    long dead = new ProcessBuilder("true").start().onExit().get().pid();
    Files.writeString(
        dir.resolve("postmaster.pid"),
        dead + "\n" + dir + "\n1\n5999\n/tmp\n127.0.0.1\n1\nready\n");
    assertThat(EmbeddedServer.runningIn(dir)).as("a process that has exited").isEmpty();
    long alive = ProcessHandle.current().pid();
    Files.writeString(
        dir.resolve("postmaster.pid"),
        alive + "\n" + dir + "\n1\n5999\n/tmp\n127.0.0.1\n1\nstarting\n");
    assertThat(EmbeddedServer.runningIn(dir)).as("a server still starting").isEmpty();
  }

  @Test
  void aServerForTestsOfLogicMayTurnDurabilityOff() throws Exception {
    try (EmbeddedServer pg = EmbeddedServer.builder().durable(false).start()) {
      assertThat(pg.dataDirectory()).isEmpty();
      assertThat(query(pg.dataSource(), "SHOW fsync")).isEqualTo("off");
      assertThat(pg.jdbcUrl()).startsWith("jdbc:postgresql://").contains(":" + pg.port() + "/");
    }
  }

  @Test
  void theBinariesIncludePgCtl() throws Exception {
    Path bin = EmbeddedServer.binaries();
    assertThat(Files.isExecutable(bin.resolve("pg_ctl"))).isTrue();
  }

  private static String query(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static void execute(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
