package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Short seeded scenarios with PostgreSQL and the workers on hosts of their own: partitions one way
 * and both ways, packet loss, latency and jumps of the database clock, next to worker kills. The
 * safe workers keep every invariant; the unsafe modes are still caught. Verdicts are about
 * invariants, never timings. Skipped without root, {@code ip}, {@code nft} and libfaketime; {@code
 * .ci/run} fails on CI when it was skipped.
 */
class NetworkFaultsTest {
  private static final long SEED = 20261204L;
  private static final Set<Scenario.Fault> NEW_KINDS =
      EnumSet.of(
          Scenario.Fault.PARTITION_ONE_WAY,
          Scenario.Fault.PARTITION_BOTH_WAYS,
          Scenario.Fault.PACKET_LOSS,
          Scenario.Fault.LATENCY,
          Scenario.Fault.CLOCK_JUMP);

  @BeforeAll
  static void needsHostsAndTheClock() {
    assumeTrue(Hosts.unavailable() == null, Hosts.unavailable());
    assumeTrue(FaultClock.unavailable() == null, FaultClock.unavailable());
  }

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void safeWorkersKeepEveryInvariantThroughPartitionsLossLatencyAndClockJumps() throws Exception {
    // Seed 20261230 draws a partition both ways first, then the clock 3.7 s forwards (past every
    // live lease), then w0's inbound traffic dropped, all while the producer runs; a 300 ms
    // receiver keeps claims in hand when they strike.
    Scenario.Config base =
        Scenario.Config.defaults(20261230L, 20_000, 2, 120)
            .withMode(WorkerMain.Mode.SAFE, EnumSet.of(Scenario.Fault.KILL_WORKER), 30, 300);
    Checker.Result r =
        FaultSuiteTest.run(FaultsCommand.withClockJumps(FaultsCommand.onHosts(base)));
    FaultSuiteTest.assertSafe(r);
    for (Scenario.Fault f : NEW_KINDS) {
      assertThat(r.faults().get(f)).as(f.name()).isPositive();
    }
    assertThat(r.figures().get("clock jumps, forward and backward")).isEven().isPositive();
  }

  /** Each unsafe mode with the faults that expose it, now on hosts with the clock jumping. */
  @ParameterizedTest(name = "{0} is still caught by {1}")
  @CsvSource({"ACK_FIRST, INBOX_EXACTLY_ONCE", "UNGUARDED, NO_LOWER_GENERATION_OUTCOME"})
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void unsafeModesAreStillCaughtOnHostsWithTheClockJumping(
      WorkerMain.Mode mode, Checker.Invariant caughtBy) throws Exception {
    Scenario.Config base =
        FaultsCommand.configFor(
            Scenario.Config.defaults(SEED + mode.ordinal(), 12_000, 2, 60), mode);
    Checker.Result r =
        FaultSuiteTest.run(FaultsCommand.withClockJumps(FaultsCommand.onHosts(base)));
    assertThat(r.violated(caughtBy)).isTrue();
  }
}
