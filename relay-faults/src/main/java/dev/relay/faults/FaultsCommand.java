package dev.relay.faults;

import dev.relay.Relay;
import java.io.PrintWriter;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code relay faults}, the fault suite's command line: runs one seeded scenario against a
 * PostgreSQL it starts itself, prints the schedule, the figures and each invariant's verdict, and
 * exits non-zero on any violation.
 *
 * <pre>
 * java -cp &lt;class path&gt; dev.relay.faults.FaultsCommand --seed 42 --minutes 30 --workers 3 --items 20000
 * </pre>
 *
 * <p>Re-running a seed with the same options repeats the fault schedule. {@code --help} and a usage
 * error start nothing: the options are checked before any server or worker exists.
 */
@Command(
    name = "relay faults", // as the ./relay script runs it: the usage line names the real command
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Runs the fault-injection suite and checks every invariant.",
    description = {
      "Starts its own PostgreSQL and worker processes, injects faults for --minutes (worker kills"
          + " and pauses, dropped connections, PostgreSQL crashes and restarts; with --hosts also"
          + " partitions, packet loss and latency; with --clock-jumps jumps of the database"
          + " clock), then checks every invariant and prints each verdict. Re-running a seed with"
          + " the same options repeats the fault schedule. See docs/reliability.md.",
      ""
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      " 0:every invariant held",
      " 1:an invariant was violated",
      " 2:usage error, or the harness failed (its stack trace is printed)"
    })
public final class FaultsCommand implements Callable<Integer> {
  @Option(
      names = "--seed",
      paramLabel = "N",
      description = "Seed of the fault schedule (default: random, printed).")
  Long seed;

  @Option(
      names = "--minutes",
      paramLabel = "M",
      defaultValue = "1",
      description = "Minutes of fault injection, fractions allowed (default: ${DEFAULT-VALUE}).")
  double minutes;

  @Option(
      names = "--workers",
      paramLabel = "N",
      defaultValue = "3",
      description = "Worker processes (default: ${DEFAULT-VALUE}).")
  int workers;

  @Option(
      names = "--items",
      paramLabel = "N",
      description = "Work items (default: 600 per minute, at least 200).")
  Integer items;

  @Option(
      names = "--mode",
      paramLabel = "MODE",
      defaultValue = "safe",
      converter = ModeConverter.class,
      description =
          "safe, ack-first or unguarded (default: ${DEFAULT-VALUE}); the unsafe modes exist to"
              + " show that the checker catches them.")
  WorkerMain.Mode mode;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "Accepted and ignored: the suite must crash and restart its own server, so it always"
              + " starts one.")
  String jdbcUrl;

  @Option(
      names = "--scenario",
      paramLabel = "NAME",
      description =
          "id-reuse-recover: a probe where one worker name is reused after a SIGKILL and the"
              + " replacement's first claim COMMIT reply is lost.")
  String scenario;

  @Option(
      names = "--hosts",
      description =
          "Run PostgreSQL and each worker as hosts in network namespaces of their own (root, ip"
              + " and nft needed) and add partitions one way and both ways, packet loss and"
              + " latency to the faults.")
  boolean hosts;

  @Option(
      names = "--clock-jumps",
      description =
          "Jump the database clock about one lease forwards and backwards while workers run"
              + " (Debian's libfaketime needed).")
  boolean clockJumps;

  @Option(
      names = "--no-operator",
      description =
          "Run without the seeded operator (redrive, cancel, supersede, pause and resume, purge"
              + " through the admin API) and with a one-hour deduplication horizon instead of 30 s.")
  boolean noOperator;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /**
   * Runs the suite; exits 0 if every invariant held, 1 on a violation, 2 on a usage or harness
   * error.
   *
   * @param args see {@code relay faults --help}
   */
  public static void main(String[] args) {
    System.exit(
        execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
  }

  /** Runs the command line, printing on {@code out} and {@code err}; returns the exit code. */
  static int execute(PrintWriter out, PrintWriter err, String... args) {
    CommandLine cl = new CommandLine(new FaultsCommand());
    cl.getCommandSpec().version("relay " + Relay.version()); // as relay-app's RelayCommand
    cl.setOut(out);
    cl.setErr(err);
    cl.setParameterExceptionHandler((ex, a) -> usageError(err, ex.getMessage()));
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          if (ex instanceof CommandLine.ParameterException) {
            return usageError(err, ex.getMessage());
          }
          ex.printStackTrace(err);
          return 2;
        });
    return cl.execute(args);
  }

  /** A usage error: one line naming the problem, one naming the help; exit code 2. */
  private static int usageError(PrintWriter err, String message) {
    err.println("relay faults: " + message.strip().replaceAll("\\s*\\R\\s*", "; "));
    err.println("see relay help faults");
    return 2;
  }

  /** Parses {@code args} as the command line does and runs the suite; true if it held. */
  static boolean run(String[] args) throws Exception {
    FaultsCommand c = new FaultsCommand();
    CommandLine cl = new CommandLine(c);
    cl.parseArgs(args);
    return c.runSuite();
  }

  @Override
  public Integer call() throws Exception {
    return runSuite() ? 0 : 1;
  }

  private boolean runSuite() throws Exception {
    if (!(minutes > 0)) {
      throw usage("--minutes must be more than 0, was " + minutes);
    }
    if (workers < 1) {
      throw usage("--workers must be at least 1, was " + workers);
    }
    if (items != null && items < 1) {
      throw usage("--items must be at least 1, was " + items);
    }
    if (scenario != null && !scenario.equals("id-reuse-recover")) {
      throw usage("--scenario takes id-reuse-recover, was '" + scenario + "'");
    }
    if (hosts && Hosts.unavailable() != null) {
      throw usage("--hosts cannot run here: " + Hosts.unavailable());
    }
    if (clockJumps && FaultClock.unavailable() != null) {
      throw usage("--clock-jumps cannot run here: " + FaultClock.unavailable());
    }
    long s = seed != null ? seed : System.nanoTime() % 1_000_000;
    long faultMillis = (long) (minutes * 60_000);
    int n = items != null ? items : (int) Math.max(200, Math.round(minutes * 600));
    if (jdbcUrl != null) {
      System.out.println(
          "--jdbc-url ignored: the suite starts, crashes and restarts its own server");
    }
    Scenario.Config config = Scenario.Config.defaults(s, faultMillis, workers, n);
    config = configFor(config, mode);
    if (noOperator) {
      config = config.withOperator(false);
    }
    if (scenario != null) {
      config = idReuseRecover(config);
    }
    if (hosts) {
      config = onHosts(config);
    }
    if (clockJumps) {
      config = withClockJumps(config);
    }
    Checker.Result result;
    try (Scenario run = new Scenario(config, System.out)) {
      result = run.run();
    }
    result.print(System.out);
    System.out.println("seed " + s + " (re-run with --seed " + s + ")");
    return result.ok();
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(
        spec != null ? spec.commandLine() : new CommandLine(this), message);
  }

  /** Reads {@code --mode}, naming the three modes when the value is none of them. */
  static final class ModeConverter implements CommandLine.ITypeConverter<WorkerMain.Mode> {
    @Override
    public WorkerMain.Mode convert(String value) {
      try {
        return WorkerMain.Mode.parse(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(
            "'" + value + "' is not a mode: use " + String.join(", ", modes()));
      }
    }

    private static Set<String> modes() {
      Set<String> names = new LinkedHashSet<>();
      for (WorkerMain.Mode m : WorkerMain.Mode.values()) {
        names.add(m.arg());
      }
      return names;
    }
  }

  /**
   * A probe of worker-ID reuse: one worker name, a long lease, a 1 s receiver, and the fault that
   * kills the worker, restarts it under the same ID and loses its first claim COMMIT reply.
   */
  static Scenario.Config idReuseRecover(Scenario.Config base) {
    return base.withMode(
            base.mode(), EnumSet.of(Scenario.Fault.RESTART_WITH_LOST_CLAIM_REPLY), 0, 1000)
        .withWorkers(1)
        .withLease(12_000)
        .withOperator(false);
  }

  /** The same run on hosts of their own, with partitions, packet loss and latency added. */
  static Scenario.Config onHosts(Scenario.Config base) {
    Set<Scenario.Fault> f = EnumSet.noneOf(Scenario.Fault.class);
    f.addAll(base.faults());
    f.addAll(Scenario.NETWORK_FAULTS);
    return base.withTopology(Scenario.Topology.HOSTS, f);
  }

  /** The same run with jumps of the database clock added. */
  static Scenario.Config withClockJumps(Scenario.Config base) {
    Set<Scenario.Fault> f = EnumSet.noneOf(Scenario.Fault.class);
    f.addAll(base.faults());
    f.add(Scenario.Fault.CLOCK_JUMP);
    return base.withTopology(base.topology(), f);
  }

  /** The settings each mode runs with; the unsafe ones add the faults that expose them. */
  static Scenario.Config configFor(Scenario.Config base, WorkerMain.Mode mode) {
    return switch (mode) {
      case SAFE -> base;
      // The unsafe modes keep the run the checker must flag as it was: no operator.
      // Done before the effect: kills between the two lose effects.
      case ACK_FIRST ->
          base.withMode(
                  mode,
                  EnumSet.of(Scenario.Fault.KILL_WORKER, Scenario.Fault.DROP_CONNECTIONS),
                  60,
                  0)
              .withOperator(false);
      // Naive completion by worker name: a frozen worker replaced under the same ID. One worker,
      // so that the replacement (same name) is the one that takes the frozen worker's claims over.
      case UNGUARDED -> {
        Set<Scenario.Fault> f = EnumSet.of(Scenario.Fault.PAUSE_AND_REPLACE);
        yield base.withMode(mode, f, 0, 1000).withWorkers(1).withOperator(false);
      }
    };
  }
}
