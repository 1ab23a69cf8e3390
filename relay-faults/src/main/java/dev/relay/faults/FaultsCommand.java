package dev.relay.faults;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * The fault suite's command line: runs one seeded scenario against a PostgreSQL it starts itself,
 * prints the schedule, the figures and each invariant's verdict, and exits non-zero on any
 * violation.
 *
 * <pre>
 * java -cp &lt;class path&gt; dev.relay.faults.FaultsCommand --seed 42 --minutes 30 --workers 3 --items 20000
 * </pre>
 *
 * <p>Options: {@code --seed} (default: random, printed), {@code --minutes} of fault injection
 * (fractions allowed; default 1), {@code --workers} (default 3), {@code --items} (default 600 per
 * minute, at least 200), {@code --mode safe|ack-first|unguarded} (the unsafe modes exist to show
 * that the checker catches them), {@code --jdbc-url} (accepted and ignored: the suite must crash
 * and restart its own server, so it always starts one), {@code --scenario id-reuse-recover} (a
 * probe: one worker name reused after a SIGKILL, and the replacement's first claim COMMIT reply
 * lost). Re-running a seed with the same options repeats the fault schedule.
 */
public final class FaultsCommand {
  private FaultsCommand() {}

  /**
   * Runs the suite; exits 0 if every invariant held, 1 on a violation, 2 on a harness error.
   *
   * @param args see the class comment
   */
  public static void main(String[] args) {
    int code;
    try {
      code = run(args) ? 0 : 1;
    } catch (Exception e) {
      e.printStackTrace();
      code = 2;
    }
    System.exit(code);
  }

  static boolean run(String[] args) throws Exception {
    Map<String, String> a = Args.parse(args);
    long seed =
        a.containsKey("seed") ? Long.parseLong(a.get("seed")) : System.nanoTime() % 1_000_000;
    double minutes = Double.parseDouble(a.getOrDefault("minutes", "1"));
    int workers = Integer.parseInt(a.getOrDefault("workers", "3"));
    long faultMillis = (long) (minutes * 60_000);
    int items =
        Integer.parseInt(
            a.getOrDefault("items", Long.toString(Math.max(200, Math.round(minutes * 600)))));
    WorkerMain.Mode mode = WorkerMain.Mode.parse(a.getOrDefault("mode", "safe"));
    if (a.containsKey("jdbc-url")) {
      System.out.println(
          "--jdbc-url ignored: the suite starts, crashes and restarts its own server");
    }
    Scenario.Config config = Scenario.Config.defaults(seed, faultMillis, workers, items);
    config = configFor(config, mode);
    if ("id-reuse-recover".equals(a.get("scenario"))) {
      config = idReuseRecover(config);
    }
    Checker.Result result;
    try (Scenario scenario = new Scenario(config, System.out)) {
      result = scenario.run();
    }
    result.print(System.out);
    System.out.println("seed " + seed + " (re-run with --seed " + seed + ")");
    return result.ok();
  }

  /**
   * A probe of worker-ID reuse: one worker name, a long lease, a 1 s receiver, and the fault that
   * kills the worker, restarts it under the same ID and loses its first claim COMMIT reply.
   */
  static Scenario.Config idReuseRecover(Scenario.Config base) {
    return base.withMode(
            base.mode(), EnumSet.of(Scenario.Fault.RESTART_WITH_LOST_CLAIM_REPLY), 0, 1000)
        .withWorkers(1)
        .withLease(12_000);
  }

  /** The settings each mode runs with; the unsafe ones add the faults that expose them. */
  static Scenario.Config configFor(Scenario.Config base, WorkerMain.Mode mode) {
    return switch (mode) {
      case SAFE -> base;
      // Done before the effect: kills between the two lose effects.
      case ACK_FIRST ->
          base.withMode(
              mode, EnumSet.of(Scenario.Fault.KILL_WORKER, Scenario.Fault.DROP_CONNECTIONS), 60, 0);
      // Naive completion by worker name: a frozen worker replaced under the same ID. One worker,
      // so that the replacement (same name) is the one that takes the frozen worker's claims over.
      case UNGUARDED -> {
        Set<Scenario.Fault> f = EnumSet.of(Scenario.Fault.PAUSE_AND_REPLACE);
        yield base.withMode(mode, f, 0, 1000).withWorkers(1);
      }
    };
  }
}
