package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM that ends on {@code SIGTERM} (a container's stop, {@code timeout}, Ctrl-C's sibling)
 * without closing its server: with {@link EmbeddedServer.Builder#stopOnExit} the server stops with
 * it; without, it keeps running (what the bench and the demo left behind before).
 */
class StopOnExitTest {
  @TempDir Path tmp;

  /** Starts a server on the directory in args[0], stop on exit as args[1] says, and waits. */
  public static void main(String[] args) throws Exception {
    EmbeddedServer pg =
        EmbeddedServer.builder()
            .dataDirectory(Path.of(args[0]))
            .stopOnExit(Boolean.parseBoolean(args[1]))
            .start();
    System.out.println("ready " + pg.port());
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE); // until terminated: the server is never closed here
  }

  @Test
  void aTerminatedJvmStopsItsServer() throws Exception {
    Path dir = tmp.resolve("pgdata");
    startAndTerminate(dir, true); // waits (bounded) for the server's process to end
    assertThat(EmbeddedServer.runningIn(dir)).isEmpty();
    assertThat(dir.resolve("postmaster.pid")).doesNotExist();
  }

  @Test
  void withoutItTheServerOutlivesItsJvm() throws Exception {
    Path dir = tmp.resolve("left");
    long postmaster = startAndTerminate(dir, false);
    try {
      assertThat(EmbeddedServer.runningIn(dir)).as("still running, still named").isPresent();
    } finally {
      var handle = ProcessHandle.of(postmaster);
      if (handle.isPresent()) {
        handle.get().destroy(); // SIGTERM: the server's smart shutdown, no client is connected
        handle.get().onExit().get(2, TimeUnit.MINUTES);
      }
    }
  }

  /** Runs {@link #main} in a JVM of its own, ends it with SIGTERM; returns the server's pid. */
  private static long startAndTerminate(Path dir, boolean stopOnExit) throws Exception {
    List<String> cmd =
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            StopOnExitTest.class.getName(),
            dir.toString(),
            Boolean.toString(stopOnExit));
    Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      StringBuilder seen = new StringBuilder();
      while ((line = out.readLine()) != null && !line.startsWith("ready ")) {
        seen.append(line).append('\n');
      }
      assertThat(line).as("the child's output:\n%s", seen).isNotNull();
      long postmaster = Long.parseLong(Files.readAllLines(dir.resolve("postmaster.pid")).get(0));
      child.destroy(); // SIGTERM
      assertThat(child.waitFor(2, TimeUnit.MINUTES)).as("the child exited").isTrue();
      if (stopOnExit) {
        // the hook stopped the server before the JVM exited; the postmaster's own exit may trail
        // the removal of its pid file by a moment
        var handle = ProcessHandle.of(postmaster);
        if (handle.isPresent()) {
          handle.get().onExit().get(2, TimeUnit.MINUTES);
        }
      }
      return postmaster;
    } finally {
      child.destroyForcibly();
    }
  }
}
