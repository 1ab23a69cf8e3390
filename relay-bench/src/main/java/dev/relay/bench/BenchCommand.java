package dev.relay.bench;

import dev.relay.Relay;
import dev.relay.test.JdbcUrls;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code relay bench}: Relay's throughput, latency and cost growth on one PostgreSQL, next to the
 * limit of the same statement shapes over plain JDBC and, with {@code --peers}, next to
 * db-scheduler, JobRunr and transaction-outbox on the same database in the same run. Every scenario
 * runs {@code --runs} times (3 by default) and reports the median. Durability stays on: the
 * embedded server is started with {@code fsync}, {@code synchronous_commit} and {@code
 * full_page_writes} on, and the settings in force are printed.
 *
 * <p>It does not tune the server it is pointed at, and it truncates the tables it uses: point it at
 * a scratch database only. One run at a time per database: a run holds a session advisory lock for
 * its whole length, and a second run on the same database exits (code 3) before it changes
 * anything.
 */
@Command(
    name = "relay bench", // as the ./relay script runs it: the usage line names the real command
    mixinStandardHelpOptions = true,
    header = "Benchmarks Relay against the PostgreSQL limit and its peers.",
    description = {
      "Runs each scenario --runs times and reports the median, with durability on. It truncates"
          + " the tables it uses: point --jdbc-url at a scratch database only. See"
          + " docs/performance.md.",
      ""
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      " 0:done",
      " 1:the run failed (its stack trace is printed)",
      " 2:usage error (unknown or missing options, bad values), before anything starts",
      " 3:the database cannot be reached or started (one line naming the cause), or another"
          + " relay bench is running on it (nothing was changed)"
    })
public final class BenchCommand implements Callable<Integer> {
  /**
   * Exit code when the database cannot be reached or started, or another run holds it ({@link
   * BenchDb#lockForRun}).
   */
  static final int BUSY = 3;

  /** The steady-load rate at which the issue sets the pickup targets. */
  static final int PICKUP_TARGET_RATE = 500;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "A scratch database, like jdbc:postgresql://host:5432/db?user=u (default: an"
              + " embedded, durable PostgreSQL; env RELAY_JDBC_URL is not read, as the bench"
              + " truncates its tables). Another form, or an empty URL, is a usage error.")
  String jdbcUrl;

  @Option(names = "--jobs", paramLabel = "N", description = "Burn-down backlog (default 100,000).")
  Integer jobs;

  @Option(
      names = "--workers",
      paramLabel = "N",
      description = "Handler threads per instance (default 8).")
  int workers = 8;

  @Option(
      names = "--batch",
      paramLabel = "N",
      description =
          "Rows per limit transaction, and per claim of the tuned Relay comparison (default: Relay's"
              + " own claim ceiling, 500); Relay itself runs at its defaults.")
  int batch = Relay.DEFAULT_BATCH_SIZE;

  @Option(
      names = "--runs",
      paramLabel = "N",
      description = "Runs per scenario (default 3; --quick 1).")
  Integer runs;

  @Option(
      names = "--seconds",
      paramLabel = "N",
      description = "Seconds per steady-load run (default 15).")
  Integer seconds;

  @Option(
      names = "--rates",
      paramLabel = "RATE",
      split = ",",
      description = "Steady-load rates, jobs/s (default 100,500,2000; --quick 100,500).")
  List<Integer> rates;

  @Option(
      names = "--retained",
      paramLabel = "N",
      description = "Done rows for the growth scenario (default 1M).")
  Integer retained;

  @Option(
      names = "--ids",
      paramLabel = "sequential|random",
      description =
          "How loaded work is named: sequential (b-1, b-2, ...: the default) or random (32 hex"
              + " digits, as UUIDs): the burn-down backlogs, the limit's rows and the growth part's"
              + " retained rows.")
  BenchIds ids = BenchIds.sequential;

  @Option(
      names = "--enqueue-history-days",
      paramLabel = "DAYS",
      description =
          "Past days of finished work (100,000 rows a day, each with its tombstone) kept while the"
              + " enqueue part runs, as a Relay that retains a week holds (default 0).")
  Integer enqueueHistoryDays;

  @Option(
      names = "--history-rows",
      paramLabel = "N",
      description = "Done rows loaded for the history part (default 10,000,000; --quick 4,000).")
  Integer historyRows;

  @Option(
      names = "--history-purge",
      paramLabel = "N",
      description =
          "Of --history-rows, how many are past retention and purged by the history part"
              + " (default 5,000,000; --quick 2,000).")
  Integer historyPurge;

  @Option(
      names = "--history-layout",
      paramLabel = "both|rows|days",
      description =
          "Which removal the history part measures: both (default), rows (the per-row purge of"
              + " finished rows in the work table) or days (retiring whole days of the history"
              + " table).")
  HistoryBench.Layout historyLayout = HistoryBench.Layout.both;

  @Option(
      names = "--memory-backlog",
      paramLabel = "N",
      description = "Backlog drained by the memory scenario (default 1,000,000).")
  Integer memoryBacklog;

  @Option(names = "--json", paramLabel = "FILE", description = "Write the report to this file.")
  Path json;

  @Option(names = "--peers", description = "Also run db-scheduler, JobRunr, transaction-outbox.")
  boolean peers;

  @Option(
      names = "--full",
      description =
          "Larger sizes: 5M retained rows, 3 memory runs, transaction-outbox at every rate.")
  boolean full;

  @Option(
      names = "--kafka",
      paramLabel = "ADDRESS",
      description =
          "A Kafka broker (host:port) for the kafka part: Relay publishing through its Kafka"
              + " transport against the raw producer and its own no-op burn-down.")
  String kafka;

  @Option(
      names = "--rabbitmq",
      paramLabel = "ADDRESS",
      description =
          "A RabbitMQ broker (host:port) for the rabbitmq part (default 127.0.0.1:5672 when the"
              + " part is named in --only): Relay publishing through its RabbitMQ transport"
              + " against the raw client (persistent, mandatory, confirms) and its own no-op"
              + " burn-down. The part declares and deletes its own queues.")
  String rabbitmq;

  @Option(
      names = "--rabbitmq-user",
      paramLabel = "USER",
      description = "RabbitMQ user (default guest).")
  String rabbitmqUser = "guest";

  @Option(
      names = "--rabbitmq-password",
      paramLabel = "PASSWORD",
      description = "RabbitMQ password (default guest).")
  String rabbitmqPassword = "guest";

  @Option(
      names = "--nats",
      paramLabel = "ADDRESS",
      description =
          "A NATS server with JetStream (host:port) for the nats part (default 127.0.0.1:4222 when"
              + " the part is named in --only): Relay publishing through its NATS transport against"
              + " the raw JetStream client (Nats-Msg-Id, acked) and its own no-op burn-down. The"
              + " part creates and deletes its own streams.")
  String nats;

  @Option(names = "--quick", description = "Tiny sizes, one run each (seconds): a smoke run.")
  boolean quick;

  @Option(
      names = "--only",
      paramLabel = "PART",
      split = ",",
      description =
          "Relay's parts to run (default all): enqueue, burn-down, limits, growth, steady, handoff,"
              + " memory, stranded, slow-receiver, scale-out (only when named here: 1, 2, 4 worker"
              + " processes and one process on two databases),"
              + " kafka (needs --kafka), rabbitmq, nats (these two run only when named here or"
              + " given --rabbitmq / --nats), console-overview (only when named here; 1M rows"
              + " and --retained), console-pages (only when named here: the console's pages,"
              + " p50/p95, at --retained rows, 5M with --full), ready-index (only when named"
              + " here: WAL per write and paired"
              + " throughput with and without the ready list's partial index), history (only when"
              + " named here: --history-rows finished rows, --history-purge of them removed by"
              + " Relay's retention while a burn-down runs, row by row from the work table (then"
              + " a vacuum) and a day at a time from the history table, per --history-layout:"
              + " time, WAL, bloat and the burn-down's rate in each phase); the peers run"
              + " with --peers whatever this says.")
  Set<String> only;

  private final PrintStream out;

  /** A command that prints to standard output. */
  public BenchCommand() {
    this(System.out);
  }

  BenchCommand(PrintStream out) {
    this.out = out;
  }

  /** Runs the command line. */
  public static void main(String[] args) {
    // Quiet by default: JobRunr warns about its own job filters' speed on every enqueue batch.
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    if (System.getProperty("org.slf4j.simpleLogger.log.org.jobrunr") == null) {
      System.setProperty("org.slf4j.simpleLogger.log.org.jobrunr", "error");
    }
    System.exit(execute(System.out, new PrintWriter(System.err, true), args));
  }

  /**
   * Runs the command line, reporting on {@code out}; returns the exit code: 0 done, 1 the run
   * failed (its stack trace is printed), 2 a usage error (one line naming the option, and where the
   * options are described), reported before anything starts, 3 another run holds the database.
   */
  static int execute(PrintStream out, PrintWriter err, String... args) {
    JdbcUrls.silenceDriverLog(); // its lines quote a URL's password; the bench's own mask it
    CommandLine cl = new CommandLine(new BenchCommand(out));
    cl.getCommandSpec().version("relay " + Relay.version()); // as relay-app's RelayCommand
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(err);
    cl.setParameterExceptionHandler((ex, a) -> usageError(err, ex.getMessage()));
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          if (ex instanceof CommandLine.ParameterException) {
            return usageError(err, ex.getMessage());
          }
          if (ex instanceof BenchDb.BusyException) {
            err.println("relay bench: " + ex.getMessage());
            return BUSY;
          }
          if (ex instanceof BenchDb.UnavailableException) {
            err.println(
                "relay bench: database unavailable: " + JdbcUrls.maskPasswords(ex.getMessage()));
            return BUSY;
          }
          ex.printStackTrace(err);
          return 1;
        });
    return cl.execute(args);
  }

  /**
   * {@code url} ({@code --jdbc-url}), or null when not given (the embedded server); a usage error
   * when it is empty or breaks the URL rules every relay command follows ({@link
   * JdbcUrls#problem}).
   */
  static String checkedUrl(CommandLine cl, String url) {
    if (url == null) {
      return null;
    }
    if (url.isBlank()) {
      throw new CommandLine.ParameterException(
          cl,
          "--jdbc-url is empty: give a PostgreSQL JDBC URL like "
              + JdbcUrls.EXAMPLE
              + ", or leave --jdbc-url out to use an embedded PostgreSQL");
    }
    String problem = JdbcUrls.problem("--jdbc-url", url);
    if (problem != null) {
      throw new CommandLine.ParameterException(cl, problem);
    }
    return url;
  }

  private static int usageError(PrintWriter err, String message) {
    err.println(
        "relay bench: " + JdbcUrls.maskPasswords(message.strip().replaceAll("\\s*\\R\\s*", "; ")));
    err.println("see relay help bench");
    return 2;
  }

  private void positive(String option, Integer value) {
    if (value != null && value < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), option + " must be at least 1, was " + value);
    }
  }

  Sizes sizes() {
    if (quick) {
      return new Sizes(
          or(runs, 1),
          or(jobs, 300),
          workers,
          batch,
          50,
          1_000,
          rates == null ? List.of(100, 500) : rates,
          or(seconds, 1),
          or(retained, 2_000),
          or(memoryBacklog, 1_000),
          1);
    }
    return new Sizes(
        or(runs, 3),
        or(jobs, 100_000),
        workers,
        batch,
        5_000,
        50_000,
        rates == null ? List.of(100, 500, 2_000) : rates,
        or(seconds, 15),
        or(retained, full ? 5_000_000 : 1_000_000),
        or(memoryBacklog, 1_000_000),
        full ? or(runs, 3) : 1);
  }

  int enqueueHistoryDays() {
    return enqueueHistoryDays == null ? 0 : enqueueHistoryDays;
  }

  int historyRows() {
    return or(historyRows, quick ? 4_000 : HistoryBench.DEFAULT_ROWS);
  }

  int historyPurge() {
    return or(historyPurge, quick ? 2_000 : HistoryBench.DEFAULT_PURGE);
  }

  private static int or(Integer value, int fallback) {
    return value == null ? fallback : value;
  }

  private static final Set<String> PARTS =
      Set.of(
          "enqueue",
          "burn-down",
          "limits",
          "growth",
          "steady",
          "handoff",
          "memory",
          "stranded",
          "slow-receiver",
          "scale-out",
          "kafka",
          "rabbitmq",
          "nats",
          "console-overview",
          "console-pages",
          "ready-index",
          "history");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (only != null && !PARTS.containsAll(only)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--only takes " + new TreeSet<>(PARTS) + ", not " + only);
    }
    positive("--jobs", jobs);
    positive("--workers", workers);
    positive("--batch", batch);
    positive("--runs", runs);
    positive("--seconds", seconds);
    positive("--retained", retained);
    if (enqueueHistoryDays != null && (enqueueHistoryDays < 0 || enqueueHistoryDays > 60)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--enqueue-history-days must be 0 to 60, was " + enqueueHistoryDays);
    }
    positive("--memory-backlog", memoryBacklog);
    positive("--history-rows", historyRows);
    positive("--history-purge", historyPurge);
    if (historyRows() < historyPurge()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--history-purge ("
              + historyPurge()
              + ") cannot exceed --history-rows ("
              + historyRows()
              + ")");
    }
    if (rates != null) {
      for (int rate : rates) {
        positive("--rates", rate);
      }
    }
    if (only != null && only.contains("kafka") && kafka == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--only kafka needs --kafka host:port (a running broker)");
    }
    String url = checkedUrl(spec.commandLine(), jdbcUrl);
    Sizes sizes = sizes();
    Report report = new Report(out);
    report.meta("sizes", sizes.toString());
    report.meta("ids", ids.name());
    report.meta("cores", Runtime.getRuntime().availableProcessors());
    report.meta("java", System.getProperty("java.version"));
    started = System.nanoTime();
    try (BenchDb db = BenchDb.open(url)) {
      db.lockForRun(); // before anything is truncated: a second run on this database is refused
      Map<String, String> settings = db.settings();
      report.log("relay bench: " + sizes + ", ids " + ids);
      report.log(
          "database: " + (db.embedded() ? "embedded " : "") + JdbcUrls.maskPasswords(db.url()));
      report.log("settings: " + settings);
      report.meta("settings", settings);
      if (!"on".equals(settings.get("fsync")) || !"on".equals(settings.get("synchronous_commit"))) {
        report.log("WARNING: fsync or synchronous_commit is off: these numbers are not durable");
      }
      RelayBench relay = new RelayBench(db, sizes, ids, report);
      report.log(
          "relay runs at its defaults; settings the bench changes: " + relay.settingsChanged());
      report.meta("relay_settings_changed", relay.settingsChanged());
      relay.migrate();
      LimitBench limit = new LimitBench(db, sizes, ids, report);
      limit.setUp();
      if (runs("burn-down") || runs("growth") || runs("steady") || runs("memory") || peers) {
        step(report, "warm-up: a discarded round of relay burn-down, steady load and the limit");
        relay.warmUp(runs("steady"));
        limit.warmUp(Math.min(sizes.jobs(), RelayBench.WARM_UP_JOBS));
      }

      if (runs("enqueue")) {
        step(report, "enqueue: relay and postgres-limit, alternating after a warm-up round");
        new EnqueueComparison(relay, limit, sizes, report).run(enqueueHistoryDays());
      }
      if (runs("burn-down")) {
        step(report, "burn-down: relay");
        relay.burnDown();
        step(report, "claim+complete: postgres-limit");
        limit.claimComplete();
      }
      if (peers) {
        DbSchedulerPeer dbs = new DbSchedulerPeer(db, sizes, report);
        dbs.setUp();
        step(report, "burn-down: db-scheduler lock-and-fetch");
        dbs.burnDown(true);
        step(report, "burn-down: db-scheduler default");
        dbs.burnDown(false);
        step(report, "burn-down: jobrunr");
        new JobRunrPeer(db, sizes, report).burnDown();
        TransactionOutboxPeer txno = new TransactionOutboxPeer(db, sizes, report);
        step(report, "burn-down: transaction-outbox");
        txno.burnDown();
        // The pickup targets are set at 500 jobs/s: the peer that runs work in-process after
        // commit is measured there (all rates with --full).
        for (int rate : sizes.rates()) {
          if (full || rate == PICKUP_TARGET_RATE) {
            step(report, "steady: transaction-outbox " + rate + "/s");
            txno.steady(rate);
          }
        }
      }
      if (runs("limits")) {
        step(report, "claim cost: unlimited, max_running and rate-limited kinds");
        new FlowLimitBench(db, sizes, report).claimCost(relay);
      }
      if (runs("growth")) {
        step(report, "growth: relay");
        relay.growth();
      }
      if (runs("steady")) {
        step(report, "steady: relay");
        relay.steady();
      }
      if (runs("handoff")) {
        step(report, "steady: relay local hand-off " + PICKUP_TARGET_RATE + "/s");
        relay.steadyHandoff(PICKUP_TARGET_RATE);
      }
      if (runs("memory")) {
        step(report, "memory: relay");
        relay.memoryBacklog();
      }
      if (runs("slow-receiver")) {
        step(report, "slow receiver: relay over HTTP (200 ms answers) against direct calls");
        new SlowReceiverBench(relay, sizes, report).run();
      }
      if (runs("stranded")) {
        step(report, "stranded: a worker process killed (kill -9) under a backlog");
        new StrandedBench(db, relay, sizes, report).run();
      }
      if (kafka != null && runs("kafka")) {
        step(report, "kafka publish: raw producer, relay no-op, relay + KafkaTransport");
        new KafkaBench(kafka, relay, sizes, report).publish();
      }
      if (named("rabbitmq", rabbitmq)) {
        step(report, "rabbitmq publish: raw client, relay no-op, relay + RabbitTransport");
        new RabbitBench(
                rabbitmq == null ? "127.0.0.1:5672" : rabbitmq,
                rabbitmqUser,
                rabbitmqPassword,
                relay,
                sizes,
                report)
            .publish();
      }
      if (only != null && only.contains("scale-out")) {
        step(report, "scale-out: 1, 2 and 4 worker processes; one process serving two databases");
        new ScaleOutBench(db, relay, sizes, report).run();
      }
      if (only != null && only.contains("console-overview")) {
        step(report, "console overview: 1M rows, then --retained (5M with --full)");
        new ConsoleOverviewBench(db, sizes, report).run();
      }
      if (only != null && only.contains("console-pages")) {
        step(report, "console pages: overview, lists and charts at --retained rows, p50/p95");
        new ConsolePagesBench(db, sizes, report).run();
      }
      if (only != null && only.contains("ready-index")) {
        step(report, "ready index: WAL per write and paired enqueue throughput, with and without");
        new ReadyIndexBench(db, sizes, report).run();
      }
      if (only != null && only.contains("history")) {
        step(
            report,
            String.format(
                Locale.ROOT,
                "history: %,d finished rows, %,d of them removed while a burn-down runs (%s)",
                historyRows(),
                historyPurge(),
                historyLayout.describe()));
        new HistoryBench(db, relay, report, historyRows(), historyPurge(), sizes.steadySeconds())
            .run(historyLayout);
      }
      if (named("nats", nats)) {
        step(report, "nats publish: raw client, relay no-op, relay + NatsTransport");
        new NatsBench(nats == null ? "127.0.0.1:4222" : nats, relay, sizes, report).publish();
      }
      Ratios.add(report, sizes);
    }
    report.meta("elapsed_s", Math.round(RelayBench.seconds(started)));
    report.printTable();
    Ratios.print(report, out);
    out.printf(Locale.ROOT, "%nelapsed: %.0f s%n", RelayBench.seconds(started));
    if (json != null) {
      report.writeJson(json);
      out.println("wrote " + json);
    }
    return 0;
  }

  private long started; // when call() began: step lines and the report count from it

  private boolean runs(String part) {
    return only == null || only.contains(part);
  }

  /**
   * A broker part runs when named in {@code --only}, or when its broker option is given and {@code
   * --only} does not leave it out: never by default, so a plain run needs no broker.
   */
  private boolean named(String part, String brokerOption) {
    return only != null ? only.contains(part) : brokerOption != null;
  }

  private void step(Report report, String what) {
    report.log(String.format(Locale.ROOT, "-- [%.0f s] %s", RelayBench.seconds(started), what));
  }
}
