package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs short seeded scenarios: the safe one must pass every invariant, and each deliberately unsafe
 * mode must make the checker report the invariant it breaks. Verdicts are about invariants, never
 * timings; a seed repeats the fault schedule, not the interleaving.
 */
class FaultSuiteTest {
  private static final long SEED = 20261202L;

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void safeWorkersKeepEveryInvariantUnderAllFaults() throws Exception {
    Checker.Result r = run(WorkerMain.Mode.SAFE, SEED, 30_000, 3, 150);
    assertSafe(r);
    assertThat(r.faults().get(Scenario.Fault.CRASH_POSTGRES)).isPositive();
    assertThat(r.faults().get(Scenario.Fault.PAUSE_AND_REPLACE)).isPositive();
    // The operator acted through the admin API while the faults ran.
    assertThat(
            r.figures().entrySet().stream()
                .filter(e -> e.getKey().startsWith("operator ") && e.getKey().endsWith(" ok"))
                .mapToLong(Map.Entry::getValue)
                .sum())
        .isPositive();
  }

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void doneBeforeTheEffectLosesEffectsAndTheCheckerSaysSo() throws Exception {
    Checker.Result r = run(WorkerMain.Mode.ACK_FIRST, SEED + 1, 15_000, 3, 100);
    assertThat(r.violated(Checker.Invariant.INBOX_EXACTLY_ONCE)).isTrue();
    assertThat(r.ok()).isFalse();
  }

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void unguardedCompletionWithReusedWorkerIdsIsCaughtAsAStaleWrite() throws Exception {
    Checker.Result r = run(WorkerMain.Mode.UNGUARDED, SEED + 2, 15_000, 1, 80);
    assertThat(r.violated(Checker.Invariant.NO_LOWER_GENERATION_OUTCOME)).isTrue();
    assertThat(r.ok()).isFalse();
  }

  /**
   * Regression for the suite's one core finding: a worker restarted under the same ID whose first
   * claim loses its COMMIT reply must not adopt its dead predecessor's claims (seed 5 showed 23
   * unexplained repeats before the fix).
   */
  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void restartUnderTheSameIdWithALostClaimReplyRepeatsNothingUnexplained() throws Exception {
    Scenario.Config config =
        FaultsCommand.idReuseRecover(Scenario.Config.defaults(5, 30_000, 1, 100));
    Checker.Result r = run(config);
    assertThat(r.violated(Checker.Invariant.RAW_REPEATS_EXPLAINED)).isFalse();
    assertThat(r.ok()).isTrue();
  }

  /** The soak: {@code ./mvnw -pl relay-faults -Psoak verify -Dfaults.minutes=30}. */
  @Test
  void soak() throws Exception {
    double minutes = Double.parseDouble(System.getProperty("faults.minutes", "0"));
    assumeTrue(minutes > 0, "soak runs only with -Psoak");
    assertThat(FaultsCommand.run(new String[] {"--seed", "42", "--minutes", "" + minutes}))
        .as("soak verdict")
        .isTrue();
  }

  private static Checker.Result run(
      WorkerMain.Mode mode, long seed, long faultMillis, int workers, int items) throws Exception {
    return run(
        FaultsCommand.configFor(Scenario.Config.defaults(seed, faultMillis, workers, items), mode));
  }

  /** Runs a scenario, prints its report, and checks that nothing it started is left behind. */
  /**
   * Every invariant held, and every committed item is done, or ended by the operator (cancelled,
   * audited) or failed with evidence after the last sweep.
   */
  static void assertSafe(Checker.Result r) {
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
    assertThat(r.figures().get("items committed"))
        .isEqualTo(
            r.figures().get("items done")
                + r.figures().get("items cancelled by the operator (audited)")
                + r.figures().get("items failed with evidence"));
  }

  static Checker.Result run(Scenario.Config config) throws Exception {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8);
    Checker.Result result;
    Path dir;
    try (Scenario scenario = new Scenario(config, out)) {
      dir = scenario.dir();
      result = scenario.run();
    } finally {
      System.out.print(buffer.toString(StandardCharsets.UTF_8));
    }
    result.print(System.out);
    // Everything the run started is gone: worker JVMs, PostgreSQL, its data directory, and the
    // network namespaces of its hosts, if it had any.
    assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive)).isEmpty();
    assertThat(Files.exists(dir)).isFalse();
    if (config.topology() == Scenario.Topology.HOSTS) {
      Process list = new ProcessBuilder(Hosts.tool("ip"), "netns", "list").start();
      assertThat(new String(list.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
          .doesNotContain(Hosts.PREFIX + ProcessHandle.current().pid() + "-");
    }
    return result;
  }
}
