package dev.relay.bench;

import java.io.PrintStream;
import java.util.Locale;

/** The targets, as ratios of medians of one run. */
final class Ratios {
  private Ratios() {}

  private static double median(Report r, String name, String system, String key, Object value) {
    Scenario s = r.find(name, system, key, value);
    return s == null ? Double.NaN : s.median();
  }

  static void add(Report r, Sizes sizes) {
    double relay1 = median(r, "burn-down", "relay", "instances", 1);
    double relay2 = median(r, "burn-down", "relay", "instances", 2);
    Scenario lockAndFetch = null;
    for (Scenario s : r.scenarios()) {
      if (s.name().equals("burn-down")
          && s.system().equals("db-scheduler")
          && String.valueOf(s.params().get("polling")).startsWith("lock-and-fetch")) {
        lockAndFetch = s;
      }
    }
    Scenario jobrunr = r.find("burn-down", "jobrunr", null, null);
    ratio(
        r,
        "ratio-burn-down-defaults-vs-tuned",
        1,
        relay1,
        r.find("burn-down-tuned", "relay", "instances", 1),
        0.9);
    Scenario limit = r.find("claim-complete", "postgres-limit", null, null);
    int instances = 1;
    for (double relay : new double[] {relay1, relay2}) {
      ratio(
          r, "ratio-burn-down-vs-db-scheduler-lock-and-fetch", instances, relay, lockAndFetch, 6.0);
      ratio(r, "ratio-burn-down-vs-jobrunr", instances, relay, jobrunr, 10.0);
      ratio(
          r,
          "ratio-burn-down-vs-claim-complete-limit",
          instances,
          relay,
          limit,
          instances == 1 ? 0.85 : 0.95);
      instances++;
    }
    for (int perTx : new int[] {100, 1000}) {
      ratio(
          r,
          "ratio-bulk-enqueue-" + perTx + "-vs-insert-limit",
          1,
          median(r, "enqueue", "relay", "per_tx", perTx),
          r.find("enqueue", "postgres-limit", "per_tx", perTx),
          0.8);
    }
    ratio(
        r,
        "ratio-single-enqueue-vs-insert-limit",
        1,
        median(r, "enqueue", "relay", "per_tx", 1),
        r.find("enqueue", "postgres-limit", "per_tx", 1),
        0.85);
  }

  private static void ratio(
      Report r, String name, int instances, double relay, Scenario reference, double target) {
    if (reference == null || Double.isNaN(relay)) {
      return;
    }
    r.add(
            new Scenario(
                name,
                "relay",
                RelayBench.params(
                    "relay_instances",
                    instances,
                    "against",
                    reference.system() + " " + reference.paramText(),
                    "target",
                    target),
                "ratio"))
        .add(relay / reference.median());
  }

  static void print(Report r, PrintStream out) {
    out.println();
    out.println("| ratio | value | target | met |");
    out.println("|---|---:|---:|---|");
    for (Scenario s : r.scenarios()) {
      if (s.unit().equals("ratio") || s.unit().equals("x empty")) {
        Object target = s.params().get("target");
        double t = target instanceof Double d ? d : s.unit().equals("x empty") ? 0.9 : Double.NaN;
        String met = Double.isNaN(t) ? "-" : s.median() >= t ? "yes" : "NO";
        out.printf(
            Locale.ROOT,
            "| %s | %s | %s | %s |%n",
            s.name() + qualifier(r, s),
            Report.fmt(s.median()),
            Double.isNaN(t) ? "-" : Report.fmt(t),
            met);
      }
    }
    ceiling(out, r, "steady-pickup-p50", 2.0);
    ceiling(out, r, "steady-pickup-p99", 8.0);
    ceiling(out, r, "steady-completion-p50", 5.0);
    ceiling(out, r, "steady-completion-p99", 20.0);
    Scenario peak = r.find("memory-heap-peak-live", "relay", null, null);
    if (peak != null && peak.median() == 0) {
      // HeapWatch saw no collection (a backlog too small to fill the young generation): a zero
      // there is no measurement, and would pass any ceiling
      out.printf(
          Locale.ROOT,
          "| memory-heap-peak-live (MiB, %s) | - | <= %s | not measured: no collection ran |%n",
          peak.paramText(),
          Report.fmt(64.0));
    } else if (peak != null) {
      row(out, "memory-heap-peak-live (MiB, " + peak.paramText() + ")", peak.median(), 64.0);
    }
  }

  /**
   * What tells a row from others of the same name: the instances a burn-down ratio compares, or,
   * for other scenarios that appear more than once (the stranded ratio per handler time), their
   * parameters.
   */
  private static String qualifier(Report r, Scenario s) {
    if (s.params().containsKey("relay_instances")) {
      return " (relay x" + s.params().get("relay_instances") + ")";
    }
    long sameName = r.scenarios().stream().filter(o -> o.name().equals(s.name())).count();
    return sameName > 1 ? " (" + s.paramText() + ")" : "";
  }

  /** A latency target at 500 jobs/s with NOTIFY: met when at or below it. */
  private static void ceiling(PrintStream out, Report r, String name, double ceiling) {
    for (Scenario s : r.scenarios()) {
      if (s.name().equals(name)
          && s.system().equals("relay")
          && "500".equals(String.valueOf(s.params().get("rate")))
          && "true".equals(String.valueOf(s.params().get("notify")))) {
        row(out, name + " (ms, 500/s, notify)", s.median(), ceiling);
      }
    }
  }

  private static void row(PrintStream out, String what, double value, double ceiling) {
    out.printf(
        Locale.ROOT,
        "| %s | %s | <= %s | %s |%n",
        what,
        Report.fmt(value),
        Report.fmt(ceiling),
        value <= ceiling ? "yes" : "NO");
  }
}
