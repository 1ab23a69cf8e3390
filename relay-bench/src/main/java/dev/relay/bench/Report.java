package dev.relay.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Every scenario of one run, printed as a table and written as one JSON object. */
final class Report {
  private final List<Scenario> scenarios = new ArrayList<>();
  private final Map<String, Object> meta = new LinkedHashMap<>();
  private final PrintStream out;

  Report(PrintStream out) {
    this.out = out;
  }

  synchronized Scenario add(Scenario s) {
    scenarios.add(s);
    s.owner(this);
    return s;
  }

  void meta(String key, Object value) {
    meta.put(key, value);
  }

  List<Scenario> scenarios() {
    return Collections.unmodifiableList(scenarios);
  }

  Scenario find(String name, String system, String paramKey, Object paramValue) {
    for (Scenario s : scenarios) {
      if (s.name().equals(name)
          && s.system().equals(system)
          && (paramKey == null
              || String.valueOf(paramValue).equals(String.valueOf(s.params().get(paramKey))))) {
        return s;
      }
    }
    return null;
  }

  void log(String line) {
    out.println(line);
    out.flush();
  }

  void printTable() {
    out.println();
    out.println("| scenario | system | params | median | unit | runs |");
    out.println("|---|---|---|---:|---|---|");
    for (Scenario s : scenarios) {
      StringBuilder runs = new StringBuilder();
      for (double r : s.runs()) {
        runs.append(runs.length() == 0 ? "" : ", ").append(fmt(r));
      }
      out.printf(
          Locale.ROOT,
          "| %s | %s | %s | %s | %s | %s |%n",
          s.name(),
          s.system(),
          s.paramText(),
          fmt(s.median()),
          s.unit(),
          runs);
    }
    out.flush();
  }

  static String fmt(double d) {
    if (Double.isNaN(d)) {
      return "n/a";
    }
    double a = Math.abs(d);
    if (a >= 100) {
      return String.format(Locale.ROOT, "%,.0f", d);
    }
    if (a >= 1) {
      return String.format(Locale.ROOT, "%.2f", d);
    }
    return String.format(Locale.ROOT, "%.3f", d);
  }

  void writeJson(Path file) throws IOException {
    StringBuilder b = new StringBuilder("{\"meta\":").append(Json.object(meta));
    b.append(",\"scenarios\":[\n");
    for (int i = 0; i < scenarios.size(); i++) {
      b.append(i == 0 ? "" : ",\n").append(scenarios.get(i).toJson());
    }
    b.append("\n]}\n");
    Files.writeString(file, b.toString(), StandardCharsets.UTF_8);
  }
}
