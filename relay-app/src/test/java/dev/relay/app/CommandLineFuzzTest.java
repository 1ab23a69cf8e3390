package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.relay.RelayException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Fuzzes the {@code relay} command line in this JVM, as {@link RelayCommand#run} runs it: for each
 * command (all but {@code demo}, which starts a database of its own), seeded random vectors of its
 * own options, positional values and stray tokens, with values from a palette of valid, borderline
 * and hostile ones (negative and huge numbers, bad durations and instants, broken JSON, NUL, 500
 * characters, missing and unreadable files). Every vector runs against the test's database (a
 * {@code --jdbc-url} of its own is one of the test database, an unreachable one or a malformed one)
 * and must end with exit 0, 1, 2 or 3 within the bound, and every exception the command raised must
 * be one the command line reports as such: a usage error, a refusal, an unreachable database or a
 * Relay error. Anything else (a {@link NullPointerException}, a driver error, a date-time
 * exception) is a crash that the handler only printed as one line. {@code -Drelay.fuzz.seed=N
 * -Drelay.fuzz.inputs=N} runs another stretch.
 */
@RelayDatabaseTest
class CommandLineFuzzTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int VECTORS = Integer.getInteger("relay.fuzz.inputs", 300);
  private static final long BOUND_SECONDS = 60;
  private static final String UNREACHABLE = "jdbc:postgresql://127.0.0.1:1/x?connectTimeout=5";
  private static final ExecutorService RUNNER = Executors.newSingleThreadExecutor();

  @TempDir static Path dir;

  @AfterAll
  static void stop() {
    RUNNER.shutdownNow();
  }

  @Test
  void everyVectorRunsOrIsAUsageErrorAndNothingCrashes(TestDatabase db) throws Exception {
    Path items =
        Files.writeString(
            dir.resolve("items.json"), "[{\"id\":\"f-1\",\"kind\":\"k\",\"payload\":{}}]");
    Path garbage = Files.writeString(dir.resolve("garbage.json"), "{\"id\": [, \u0000");
    String[] values = {
      "failed",
      "ready",
      "done",
      "running",
      "cancelled",
      "x",
      "",
      " ",
      "-1",
      "0",
      "1",
      "10001",
      "2147483648",
      "99999999999999999999",
      "1h",
      "30s",
      "-5m",
      "0s",
      "P1D",
      "PT-1S",
      "7d",
      "2026-12-04T00:00:00Z",
      "1970-01-01T00:00:00Z",
      "+999999999-12-31T23:59:59Z",
      "2026-13-45",
      "now",
      "{}",
      "{\"a\":1}",
      "[",
      "\"x\"",
      "null",
      "\u0000",
      "é😀",
      "x".repeat(500),
      "order-1",
      "f-1",
      "default",
      "k",
      "dependency_failed",
      "any",
      "unknown",
      "delivered",
      "http_503",
      "--",
      "-",
      "@" + dir.resolve("no-args-file"),
      items.toString(),
      garbage.toString(),
      dir.toString(),
      dir.resolve("missing.json").toString(),
      "fuzz",
      "because"
    };
    String[] schemas = {db.schema(), "Bad-Name", "", "relay_fuzz_none", "x".repeat(64)};
    String[] urls = {db.jdbcUrl(), UNREACHABLE, "not-a-url", "", "jdbc:mysql://127.0.0.1:1/x"};
    CommandLine root = RelayCommand.newCommandLine();
    List<String> commands = new ArrayList<>(root.getSubcommands().keySet());
    commands.remove("demo");
    SplittableRandom r = new SplittableRandom(SEED);
    Map<Integer, Integer> codes = new TreeMap<>();
    InputStream stdin = System.in;
    // `enqueue --file -` reads stdin: give it nothing rather than the test runner's own stream.
    System.setIn(new ByteArrayInputStream(new byte[0]));
    try {
      for (int i = 0; i < VECTORS; i++) {
        String command = commands.get(r.nextInt(commands.size()));
        List<String> options = new ArrayList<>();
        for (OptionSpec o : root.getSubcommands().get(command).getCommandSpec().options()) {
          options.addAll(Arrays.asList(o.names()));
        }
        List<String> args = new ArrayList<>(List.of(command));
        boolean url = false;
        int n = r.nextInt(8);
        for (int k = 0; k < n; k++) {
          int dice = r.nextInt(10);
          if (dice < 6 && !options.isEmpty()) {
            String option = options.get(r.nextInt(options.size()));
            args.add(option);
            if (option.equals("--jdbc-url")) {
              url = true;
              args.add(urls[r.nextInt(urls.length)]);
            } else if (option.equals("--schema")) {
              args.add(schemas[r.nextInt(schemas.length)]);
            } else if (r.nextInt(4) > 0) {
              args.add(values[r.nextInt(values.length)]);
            }
          } else if (dice < 9) {
            args.add(values[r.nextInt(values.length)]);
          } else {
            args.add(r.nextBoolean() ? "--no-such-option" : "--verbose");
          }
        }
        if (!url && !command.equals("help")) {
          args.addAll(List.of("--jdbc-url", db.jdbcUrl(), "--schema", db.schema()));
        }
        Run run = bounded(args.toArray(String[]::new));
        codes.merge(run.code, 1, Integer::sum);
        assertThat(run.code).as("%s", run).isIn(0, 1, 2, 3);
        assertThat(run.crash).as("%s", run).isNull();
        if (!args.contains("--verbose") && !args.contains("-v")) {
          assertThat(run.err).as("%s", run).doesNotContain("\tat ");
        }
      }
    } finally {
      System.setIn(stdin);
    }
    System.out.println("relay fuzz: exit codes of " + VECTORS + " vectors: " + codes);
    // Not usage errors only: some vectors get past parsing and run.
    assertThat(codes).as("exit codes of %d vectors (seed %d)", VECTORS, SEED).containsKeys(0, 2);
  }

  private record Run(List<String> args, int code, String out, String err, Exception crash) {
    @Override
    public String toString() {
      return "relay "
          + args
          + " (seed "
          + SEED
          + "): exit "
          + code
          + (crash == null ? "" : ", crash " + crash)
          + "\n--- stdout\n"
          + out
          + "--- stderr\n"
          + err;
    }
  }

  private static Run bounded(String... args) throws Exception {
    Future<Run> f = RUNNER.submit(() -> run(args));
    try {
      return f.get(BOUND_SECONDS, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      return fail(
          "no exit within %d s: relay %s (seed %d)", BOUND_SECONDS, Arrays.asList(args), SEED);
    } catch (ExecutionException e) {
      throw new AssertionError("relay " + Arrays.asList(args) + " threw", e.getCause());
    }
  }

  private static Run run(String... args) {
    CommandLine cl = RelayCommand.newCommandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    Exception[] crash = new Exception[1];
    CommandLine.IExecutionExceptionHandler handler = cl.getExecutionExceptionHandler();
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          if (!reported(ex)) {
            crash[0] = ex;
          }
          return handler.handleExecutionException(ex, cmd, parsed);
        });
    int code = cl.execute(args);
    return new Run(List.of(args), code, out.toString(), err.toString(), crash[0]);
  }

  /** Whether {@code ex} is a failure the command line reports by design, not a crash. */
  private static boolean reported(Exception ex) {
    return ex instanceof CommandLine.ParameterException
        || ex instanceof CommandFailure
        || ex instanceof DatabaseUnavailableException
        || ex instanceof RelayException
        || ex instanceof IllegalArgumentException
        || RelayCommand.isConnectionFailure(ex);
  }
}
