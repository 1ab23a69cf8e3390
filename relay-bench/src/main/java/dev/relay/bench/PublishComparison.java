package dev.relay.bench;

import dev.relay.Handler;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The publish comparison every broker part runs ({@code kafka}, {@code rabbitmq}, {@code nats}):
 * per run, the raw client's publish rate with the transport's durability settings, Relay's own
 * no-op burn-down, and Relay claiming, publishing through the transport and completing; then the
 * ratio of the last to the lesser of the first two. Each run publishes to a fresh destination.
 */
final class PublishComparison {
  /** The target: Relay's publish rate at least 70% of the lesser reference. */
  static final double TARGET = 0.7;

  /** One measured run: a rate per second. */
  interface Run {
    double rate() throws Exception;
  }

  private PublishComparison() {}

  /**
   * {@link #run} for a message broker: parameters jobs, instances and workers; the raw system
   * {@code raw-client} in messages/s.
   */
  static void messages(
      Report report, RelayBench relay, Sizes sizes, String broker, Run raw, Run published)
      throws Exception {
    run(
        report,
        relay,
        sizes,
        broker,
        RelayBench.params("jobs", sizes.jobs(), "instances", 1, "workers", sizes.workers()),
        "raw-client",
        "messages/s",
        raw,
        published);
  }

  /** One Relay burn-down of {@code sizes.jobs()} items through {@code transport}: jobs/s. */
  static double through(RelayBench relay, Sizes sizes, Handler transport) throws Exception {
    return relay.burnDownRun(1, sizes.jobs(), false, transport, () -> {}).jobsPerSecond();
  }

  /**
   * Runs {@code sizes.runs()} rounds and records scenarios {@code <broker>-publish} (systems {@code
   * rawSystem}, {@code relay-noop}, {@code relay}) and {@code <broker>-publish-vs-lesser}.
   */
  static void run(
      Report report,
      RelayBench relay,
      Sizes sizes,
      String broker,
      Map<String, Object> params,
      String rawSystem,
      String rawUnit,
      Run raw,
      Run published)
      throws Exception {
    String name = broker + "-publish";
    Scenario rawScenario = report.add(new Scenario(name, rawSystem, params, rawUnit));
    Scenario noop = report.add(new Scenario(name, "relay-noop", params, "jobs/s"));
    Scenario relayScenario = report.add(new Scenario(name, "relay", params, "jobs/s"));
    Map<String, Object> withTarget = new LinkedHashMap<>(params);
    withTarget.put("target", TARGET);
    Scenario ratio = report.add(new Scenario(name + "-vs-lesser", "relay", withTarget, "ratio"));
    for (int run = 0; run < sizes.runs(); run++) {
      double r = raw.rate();
      rawScenario.add(r);
      relay.truncate();
      double n = relay.burnDownRun(1, sizes.jobs(), false, () -> {}).jobsPerSecond();
      noop.add(n);
      relay.truncate();
      double p = published.rate();
      relayScenario.add(p);
      ratio.add(p / Math.min(r, n));
    }
  }
}
