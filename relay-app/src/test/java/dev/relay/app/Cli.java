package dev.relay.app;

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
 * Runs the {@code relay} command as a separate process (the test class path, {@code java -cp ...
 * dev.relay.app.RelayCommand}), with {@code RELAY_JDBC_URL} removed and {@code RELAY_HOME} pointed
 * at a temporary directory so that nothing touches {@code ~/.relay}.
 */
final class Cli {
  /** What one run printed and returned. */
  record Result(int exitCode, String out, String err) {
    @Override
    public String toString() {
      return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
  }

  static final Path HOME = tempHome();

  /**
   * The test class path holds relay-serve's Logback beside slf4j-simple (the only provider in the
   * jars of relay-app, relay-bench and relay-faults): name it, quietly, so that SLF4J does not warn
   * about two providers on stderr.
   */
  static final List<String> SLF4J_SIMPLE =
      List.of(
          "-Dslf4j.provider=org.slf4j.simple.SimpleServiceProvider",
          "-Dslf4j.internal.verbosity=WARN");

  private Cli() {}

  static Result run(String... args) {
    return run(Map.of(), args);
  }

  static Result run(Map<String, String> env, String... args) {
    return runWithInput(env, "", args);
  }

  /** Runs {@code relay args} with {@code input} on its standard input. */
  static Result runWithInput(Map<String, String> env, String input, String... args) {
    return runProcess(builder(env, args), input, args);
  }

  /**
   * Runs {@code mainClass} (of this module or of one on the test class path) with {@code jvmArgs},
   * {@code RELAY_HOME} and {@code RELAY_JDBC_URL} left out of its environment unless {@code env}
   * names them.
   */
  static Result runMain(
      String mainClass, List<String> jvmArgs, Map<String, String> env, String... args) {
    ProcessBuilder pb = builder(mainClass, jvmArgs, args);
    pb.environment().remove("RELAY_HOME");
    pb.environment().putAll(env);
    return runProcess(pb, "", args);
  }

  private static Result runProcess(ProcessBuilder pb, String input, String... args) {
    try {
      Path out = Files.createTempFile("relay-cli-", ".out");
      Path err = Files.createTempFile("relay-cli-", ".err");
      pb.redirectOutput(out.toFile()).redirectError(err.toFile());
      Process p = pb.start();
      try (var stdin = p.getOutputStream()) {
        stdin.write(input.getBytes(StandardCharsets.UTF_8));
      }
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("relay " + String.join(" ", args) + " ran past 90 s");
      }
      Result r =
          new Result(
              p.exitValue(),
              Files.readString(out, StandardCharsets.UTF_8),
              Files.readString(err, StandardCharsets.UTF_8));
      Files.delete(out);
      Files.delete(err);
      return r;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** A process builder for {@code relay args} (not started). */
  static ProcessBuilder builder(Map<String, String> env, String... args) {
    ProcessBuilder pb = builder(RelayCommand.class.getName(), SLF4J_SIMPLE, args);
    pb.environment().put("RELAY_HOME", HOME.toString());
    pb.environment().putAll(env);
    return pb;
  }

  private static ProcessBuilder builder(String mainClass, List<String> jvmArgs, String... args) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx256m");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-Xshare:auto");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.addAll(jvmArgs);
    command.add(mainClass);
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().remove("RELAY_JDBC_URL");
    return pb;
  }

  private static Path tempHome() {
    try {
      return Files.createTempDirectory("relay-home-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
