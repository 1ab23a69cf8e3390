package dev.relay.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link WorkerProcess} JVMs started by the bench: same Java, same class path, their output kept in
 * a file per process. {@link #kill} is {@code kill -9} ({@link Process#destroyForcibly} sends
 * SIGKILL on Linux); {@link #close} asks each to stop and waits, killing what does not.
 */
final class Processes implements AutoCloseable {
  private final List<Process> started = new ArrayList<>();

  /** Starts one worker process and waits until it printed {@code ready}. */
  Process start(List<String> workerArgs, Path log) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(WorkerProcess.class.getName());
    cmd.addAll(workerArgs);
    Process p =
        new ProcessBuilder(cmd)
            .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    started.add(p);
    BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (!"ready".equals(line)) {
      p.destroyForcibly();
      throw new IllegalStateException(
          "worker process did not start (printed " + line + "); its errors are in " + log);
    }
    return p;
  }

  /** {@code kill -9}: the process ends at once, holding whatever it claimed. */
  static void kill(Process p) throws InterruptedException {
    p.destroyForcibly();
    p.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    for (Process p : started) {
      if (p.isAlive()) {
        try (Writer w = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8)) {
          w.write("stop\n");
        } catch (IOException e) {
          // already gone
        }
      }
    }
    try {
      for (Process p : started) {
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          kill(p);
        }
      }
    } catch (InterruptedException e) {
      started.forEach(Process::destroyForcibly);
      Thread.currentThread().interrupt();
    }
  }
}
