package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM killed with {@code kill -9} leaves its embedded server running, orphaned: the next start on
 * the same data directory stops it (fast shutdown) and takes over with the data intact; a server
 * whose owner is alive is not touched, and a start on its directory fails at once.
 */
class OrphanTakeoverTest {
  @TempDir Path tmp;

  /** Starts a server on the directory in args[0], writes a row, says ready, and waits. */
  public static void main(String[] args) throws Exception {
    EmbeddedServer pg = EmbeddedServer.builder().dataDirectory(Path.of(args[0])).start();
    try (Connection c = pg.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE kept (n int)");
      s.execute("INSERT INTO kept VALUES (42)");
    }
    System.out.println("ready " + pg.port());
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE); // until killed: the server is never closed here
  }

  @Test
  void aStartAfterTheOwnerWasKilledStopsTheOrphanAndKeepsTheData() throws Exception {
    Path dir = tmp.resolve("pgdata");
    long orphan = startAndKill(dir);
    assertThat(ProcessHandle.of(orphan).map(ProcessHandle::isAlive)).as("orphaned").contains(true);
    assertThat(EmbeddedServer.ownerOf(dir)).as("its owner has exited").isEmpty();

    List<String> notes = new ArrayList<>();
    try (EmbeddedServer again =
        EmbeddedServer.builder().dataDirectory(dir).notes(notes::add).start()) {
      assertThat(notes)
          .singleElement()
          .asString()
          .contains("stopping the orphaned embedded PostgreSQL (postmaster PID " + orphan + ")")
          .contains(dir.toString());
      assertThat(ProcessHandle.of(orphan).map(ProcessHandle::isAlive).orElse(false))
          .as("the orphan stopped")
          .isFalse();
      assertThat(EmbeddedServer.ownerOf(dir)).hasValue(ProcessHandle.current().pid());
      try (Connection c = again.dataSource().getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT n FROM kept")) {
        assertThat(rs.next()).as("the row committed before the kill").isTrue();
        assertThat(rs.getInt(1)).isEqualTo(42);
      }
    }
    assertThat(dir.resolve(EmbeddedServer.OWNER_FILE)).as("removed on a clean stop").doesNotExist();
  }

  @Test
  void aStartOnADirectoryWhoseOwnerIsAliveFailsAtOnce() throws Exception {
    Path dir = tmp.resolve("held");
    try (EmbeddedServer held = EmbeddedServer.builder().dataDirectory(dir).start()) {
      long postmaster = Long.parseLong(Files.readAllLines(dir.resolve("postmaster.pid")).get(0));
      long began = System.nanoTime();
      assertThatThrownBy(() -> EmbeddedServer.builder().dataDirectory(dir).start().close())
          .isInstanceOf(IOException.class)
          .hasMessageContaining(dir.toString())
          .hasMessageContaining("postmaster PID " + postmaster)
          .hasMessageNotContaining("Gave up waiting");
      // at once: well before the 90 s startup wait a lock conflict used to sit out
      assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - began)).isLessThan(60);
      assertThat(EmbeddedServer.runningIn(dir)).as("left running").isPresent();
      held.port();
    }
  }

  /** Runs {@link #main} in a JVM of its own, kills it (SIGKILL); returns the server's pid. */
  private static long startAndKill(Path dir) throws Exception {
    ChildJvm started = ChildJvm.startReady(OrphanTakeoverTest.class, dir);
    Process child = started.process;
    long postmaster = started.postmaster;
    try {
      child.destroyForcibly(); // SIGKILL: no shutdown hook runs
      assertThat(child.waitFor(2, TimeUnit.MINUTES)).as("the child exited").isTrue();
      return postmaster;
    } finally {
      child.destroyForcibly();
    }
  }
}
