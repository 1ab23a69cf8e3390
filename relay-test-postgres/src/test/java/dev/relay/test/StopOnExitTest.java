package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
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
    ChildJvm started = ChildJvm.startReady(StopOnExitTest.class, dir, Boolean.toString(stopOnExit));
    Process child = started.process;
    long postmaster = started.postmaster;
    try {
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
