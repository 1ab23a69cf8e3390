package dev.relay.faults;

import dev.relay.test.LoopbackProxy;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The network and clock faults of a run: partitions of a worker host, one way or both ways, and
 * random packet loss ({@link Hosts}' nftables rules), latency on the workers' proxy, and jumps of
 * the database clock ({@link FaultClock}). Each one holds for the event's duration (drawn from the
 * seed by {@link Scenario#schedule}) and is then undone; its size (the direction, the loss rate,
 * the delay, the jump) is drawn from the seed and the event, so a seed repeats them too.
 */
final class Disruptions {
  private final Hosts hosts; // null unless the topology has hosts
  private final LoopbackProxy workerProxy;
  private final FaultClock clock; // null unless the clock can jump
  private final long seed;
  private final long leaseMillis;
  private final PrintStream out;
  private final Map<String, Long> figures = new TreeMap<>();

  Disruptions(
      Hosts hosts,
      LoopbackProxy workerProxy,
      FaultClock clock,
      long seed,
      long leaseMillis,
      PrintStream out) {
    this.hosts = hosts;
    this.workerProxy = workerProxy;
    this.clock = clock;
    this.seed = seed;
    this.leaseMillis = leaseMillis;
    this.out = out;
  }

  /** The faults this class injects, and whether each needs hosts. */
  static boolean handles(Scenario.Fault f) {
    return switch (f) {
      case PARTITION_ONE_WAY, PARTITION_BOTH_WAYS, PACKET_LOSS, LATENCY, CLOCK_JUMP -> true;
      default -> false;
    };
  }

  /** Whether a fault kind needs the workers on hosts of their own. */
  static boolean needsHosts(Scenario.Fault f) {
    return f == Scenario.Fault.PARTITION_ONE_WAY
        || f == Scenario.Fault.PARTITION_BOTH_WAYS
        || f == Scenario.Fault.PACKET_LOSS;
  }

  /** The duration of one fault of the kind, drawn from the schedule's random source. */
  static long duration(Scenario.Fault f, long leaseMillis, Random r) {
    return switch (f) {
      // About one to two and a half leases: long enough for claims to be taken over.
      case PARTITION_ONE_WAY, PARTITION_BOTH_WAYS ->
          leaseMillis + r.nextInt((int) leaseMillis * 3 / 2);
      case PACKET_LOSS, LATENCY -> 3000 + r.nextInt(3000);
      case CLOCK_JUMP -> leaseMillis + r.nextInt((int) leaseMillis);
      default -> throw new IllegalArgumentException(f.name());
    };
  }

  /** Injects the event's fault, holds it for its duration, and undoes it. */
  void inject(Scenario.Event e) throws IOException, InterruptedException {
    // The size of the fault: from the seed and the event, independent of the schedule's draws.
    Random size = new Random(seed * 1_000_003L + e.atMillis() * 31 + e.fault().ordinal());
    switch (e.fault()) {
      case PARTITION_ONE_WAY -> {
        Hosts.Direction d = size.nextBoolean() ? Hosts.Direction.OUTBOUND : Hosts.Direction.INBOUND;
        partition(e, d);
      }
      case PARTITION_BOTH_WAYS -> partition(e, Hosts.Direction.BOTH);
      case PACKET_LOSS -> {
        int percent = 10 + size.nextInt(31);
        say(e, percent + " % of packets dropped at random, each way");
        hosts.loss(e.worker(), percent);
        try {
          Thread.sleep(e.durationMillis());
        } finally {
          hosts.heal(e.worker());
        }
        count("packet loss: percent dropped, summed", percent);
      }
      case LATENCY -> {
        int millis = 50 + size.nextInt(351);
        say(e, millis + " ms each way on every worker connection to the database");
        workerProxy.latency(Duration.ofMillis(millis));
        try {
          Thread.sleep(e.durationMillis());
        } finally {
          workerProxy.latency(Duration.ZERO);
        }
        count("latency: milliseconds each way, summed", millis);
      }
      case CLOCK_JUMP -> {
        // About one lease, forwards or backwards, then back to the real time: every event has
        // one jump each way.
        long jump = leaseMillis * (80 + size.nextInt(71)) / 100;
        if (size.nextBoolean()) {
          jump = -jump;
        }
        say(e, String.format(Locale.ROOT, "database clock %+.1f s, then back", jump / 1000.0));
        clock.offset(jump);
        try {
          Thread.sleep(e.durationMillis());
        } finally {
          clock.offset(0);
        }
        count(jump > 0 ? "clock jumps forward first" : "clock jumps backward first", 1);
        count("clock jumps, forward and backward", 2);
      }
      default -> throw new IllegalArgumentException(e.fault().name());
    }
  }

  private void partition(Scenario.Event e, Hosts.Direction d)
      throws IOException, InterruptedException {
    say(e, "w" + e.worker() + " " + d.text());
    hosts.partition(e.worker(), d);
    try {
      Thread.sleep(e.durationMillis());
    } finally {
      hosts.heal(e.worker());
    }
    count("partitions: " + d.text(), 1);
  }

  /** Recovery: every worker host healed, no latency, the database clock back on real time. */
  void undoAll(int workers) throws IOException, InterruptedException {
    if (hosts != null) {
      for (int i = 0; i < workers; i++) {
        hosts.heal(i);
      }
    }
    workerProxy.latency(Duration.ZERO);
    if (clock != null) {
      clock.offset(0);
    }
  }

  /** What the faults did, by name: partitions by direction, clock jumps by direction, sizes. */
  Map<String, Long> figures() {
    return Map.copyOf(figures);
  }

  private void count(String figure, long n) {
    figures.merge(figure, n, Long::sum);
  }

  private void say(Scenario.Event e, String what) {
    out.printf(Locale.ROOT, "    %s for %.1f s%n", what, e.durationMillis() / 1000.0);
  }
}
