package dev.relay.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One measured scenario of one system: its parameters, the value of every run, and their median.
 * Serialised as one entry of the {@code scenarios} array of the {@code --json} report.
 */
public final class Scenario {
  private final String name;
  private final String system;
  private final Map<String, Object> params;
  private final String unit;
  private final List<Double> runs = new ArrayList<>();
  private Report owner; // prints each run as it is recorded, when set

  /** A scenario with no runs yet. */
  public Scenario(String name, String system, Map<String, Object> params, String unit) {
    this.name = name;
    this.system = system;
    this.params = new LinkedHashMap<>(params);
    this.unit = unit;
  }

  /** Records one run's value. */
  public Scenario add(double value) {
    runs.add(value);
    if (owner != null) {
      owner.log(
          String.format(
              Locale.ROOT,
              "   %s/%s %s: run %d = %s %s",
              name,
              system,
              paramText(),
              runs.size(),
              Report.fmt(value),
              unit));
    }
    return this;
  }

  void owner(Report report) {
    this.owner = report;
  }

  /** The scenario's name, e.g. {@code burn-down}. */
  public String name() {
    return name;
  }

  /**
   * {@code relay}, {@code db-scheduler}, {@code jobrunr}, {@code transaction-outbox} or {@code
   * postgres-limit}.
   */
  public String system() {
    return system;
  }

  /** The parameters, in insertion order. */
  public Map<String, Object> params() {
    return Collections.unmodifiableMap(params);
  }

  /** The unit of every run value. */
  public String unit() {
    return unit;
  }

  /** Every run's value, in run order. */
  public List<Double> runs() {
    return Collections.unmodifiableList(runs);
  }

  /** The median of the runs (NaN without runs). */
  public double median() {
    return median(runs);
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** A short label of the parameters for the text table. */
  String paramText() {
    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, Object> e : params.entrySet()) {
      if (b.length() > 0) {
        b.append(' ');
      }
      b.append(e.getKey()).append('=').append(e.getValue());
    }
    return b.toString();
  }

  String toJson() {
    StringBuilder b = new StringBuilder();
    b.append("{\"name\":").append(Json.string(name));
    b.append(",\"system\":").append(Json.string(system));
    b.append(",\"params\":").append(Json.object(params));
    b.append(",\"median\":").append(Json.number(median()));
    b.append(",\"unit\":").append(Json.string(unit));
    b.append(",\"runs\":[");
    for (int i = 0; i < runs.size(); i++) {
      b.append(i == 0 ? "" : ",").append(Json.number(runs.get(i)));
    }
    return b.append("]}").toString();
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT, "%s/%s %s: %.3f %s %s", name, system, paramText(), median(), unit, runs);
  }
}
