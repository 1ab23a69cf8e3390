package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A test's {@code main} run in a JVM of its own that starts an embedded server on a data directory
 * and prints a line starting {@code "ready "}: the shutdown tests end it in different ways.
 */
final class ChildJvm {
  final Process process;

  /** The postmaster's PID, read from the data directory once the child said it was ready. */
  final long postmaster;

  private ChildJvm(Process process, long postmaster) {
    this.process = process;
    this.postmaster = postmaster;
  }

  /** Starts {@code main}'s class with {@code dir} and {@code args}; returns once it is ready. */
  static ChildJvm startReady(Class<?> main, Path dir, String... args) throws Exception {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                main.getName(),
                dir.toString()));
    cmd.addAll(List.of(args));
    Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      String line;
      StringBuilder seen = new StringBuilder();
      while ((line = out.readLine()) != null && !line.startsWith("ready ")) {
        seen.append(line).append('\n');
      }
      assertThat(line).as("the child's output:\n%s", seen).isNotNull();
      return new ChildJvm(
          child, Long.parseLong(Files.readAllLines(dir.resolve("postmaster.pid")).get(0)));
    } catch (Exception | AssertionError e) {
      child.destroyForcibly();
      throw e;
    }
  }
}
