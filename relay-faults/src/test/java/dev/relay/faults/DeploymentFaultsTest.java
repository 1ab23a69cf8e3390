package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fault suite in production topologies: behind PgBouncer (transaction pooling), and through a
 * failover to a promoted streaming standby, synchronous and asynchronous. Verdicts are about
 * invariants, never timings.
 */
class DeploymentFaultsTest {
  private static final long SEED = 20261203L;

  /** A run's verdict and how many worker processes warned that a failover is unsafe. */
  private record Run(Checker.Result result, long failoverWarnings) {}

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void killedWorkersAndACrashedServerRecoverBehindPgBouncer() throws Exception {
    Scenario.Config config =
        Scenario.Config.defaults(SEED, 12_000, 2, 60)
            .withTopology(
                Scenario.Topology.PGBOUNCER,
                EnumSet.of(
                    Scenario.Fault.KILL_WORKER,
                    Scenario.Fault.DROP_CONNECTIONS,
                    Scenario.Fault.CRASH_POSTGRES))
            // PgBouncer's own run: the operator (its own direct proxy) is FaultSuiteTest's.
            .withOperator(false);
    Checker.Result r = run(config).result();
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
    assertThat(r.figures().get("items committed")).isEqualTo(r.figures().get("items done"));
    assertThat(r.faults().get(Scenario.Fault.KILL_WORKER)).isPositive();
  }

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void aFailoverToASynchronousStandbyKeepsEveryInvariant() throws Exception {
    Run run = run(failover(Scenario.Topology.FAILOVER_SYNC, SEED + 1));
    Checker.Result r = run.result();
    assertThat(r.faults().get(Scenario.Fault.FAILOVER)).isEqualTo(1);
    assertThat(r.violations()).allSatisfy((inv, list) -> assertThat(list).as(inv.name()).isEmpty());
    assertThat(run.failoverWarnings()).as("workers warned of an unsafe failover").isZero();
  }

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void aFailoverToAnAsynchronousStandbyLosesReturnedCommitsAndRelayWarnedAtStart()
      throws Exception {
    Run run = run(failover(Scenario.Topology.FAILOVER_ASYNC, SEED + 2));
    Checker.Result r = run.result();
    assertThat(r.faults().get(Scenario.Fault.FAILOVER)).isEqualTo(1);
    assertThat(run.failoverWarnings()).as("every first worker warned at start").isPositive();
    // Producer commits that returned on the old primary are missing on the promoted standby.
    assertThat(r.violated(Checker.Invariant.COMMITTED_DONE)).isTrue();
  }

  private static Scenario.Config failover(Scenario.Topology topology, long seed) {
    return Scenario.Config.defaults(seed, 8_000, 2, 60)
        .withTopology(topology, EnumSet.of(Scenario.Fault.FAILOVER));
  }

  private static Run run(Scenario.Config config) throws Exception {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8);
    Checker.Result result;
    long warnings;
    try (Scenario scenario = new Scenario(config, out)) {
      result = scenario.run();
      warnings = scenario.workerLogsContaining("failover unsafe:");
    } finally {
      System.out.print(buffer.toString(StandardCharsets.UTF_8));
    }
    result.print(System.out);
    System.out.println("workers that warned of an unsafe failover: " + warnings);
    assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive)).isEmpty();
    return new Run(result, warnings);
  }
}
