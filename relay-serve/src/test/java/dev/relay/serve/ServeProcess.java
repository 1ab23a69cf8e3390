package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code relay serve} (or {@code passwd}) in a JVM of its own, on this module's class path, for
 * what a test cannot do in its own JVM: set environment variables, read the process's exit status
 * and its log as an operator sees it. {@code RELAY_JDBC_URL} and {@code RELAY_DIRECT_JDBC_URL} of
 * the build's environment are removed unless {@code env} sets them.
 */
final class ServeProcess {
  private final Process process;
  private final Path out;
  private final Path err;

  private ServeProcess(Process process, Path out, Path err) {
    this.process = process;
    this.out = out;
    this.err = err;
  }

  /** What one finished process printed, and its exit status. */
  record Result(int exitCode, String out, String err) {
    @Override
    public String toString() {
      return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
  }

  /** Starts ServeMain with {@code args}; stdout and stderr go to files of a temporary directory. */
  static ServeProcess start(Map<String, String> env, String... args) {
    try {
      Path dir = Files.createTempDirectory("relay-serve-process-");
      Path out = dir.resolve("out.log");
      Path err = dir.resolve("err.log");
      List<String> command =
          new ArrayList<>(
              List.of(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-Xmx384m",
                  "-cp",
                  System.getProperty("java.class.path"),
                  ServeMain.class.getName()));
      command.addAll(List.of(args));
      ProcessBuilder pb =
          new ProcessBuilder(command)
              .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
              .redirectOutput(out.toFile())
              .redirectError(err.toFile());
      pb.environment().remove("RELAY_JDBC_URL");
      pb.environment().remove("RELAY_DIRECT_JDBC_URL");
      pb.environment().putAll(env);
      return new ServeProcess(pb.start(), out, err);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Runs ServeMain with {@code args} to its end (a serve that starts would not end). */
  static Result run(Map<String, String> env, String... args) throws InterruptedException {
    ServeProcess p = start(env, args);
    try {
      assertThat(p.process.waitFor(3, TimeUnit.MINUTES)).as("relay serve ended").isTrue();
      return new Result(p.process.exitValue(), p.out(), p.err());
    } finally {
      p.process.destroyForcibly();
    }
  }

  Process process() {
    return process;
  }

  String out() {
    return read(out);
  }

  String err() {
    return read(err);
  }

  private static String read(Path p) {
    try {
      return Files.exists(p) ? Files.readString(p, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
