package dev.relay.console;

import dev.relay.admin.CompletionMinute;
import dev.relay.admin.QueueHealth;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * The overview: per queue and kind, counts by state (each a link to the filtered list), oldest
 * eligible age, held work, failures by reason, completions and their p50/p95, and the last hour's
 * chart.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class OverviewController {
  /** The overview chart's span: completions and failures per minute over the last hour. */
  static final Duration CHART_WINDOW = Duration.ofHours(1);

  private final Console console;

  OverviewController(Console console) {
    this.console = console;
  }

  /** One row of the overview: a queue and kind's health and the links its cells lead to. */
  record Row(
      QueueHealth health,
      Map<String, Link> counts,
      List<Link> blocked,
      List<Link> failures,
      String oldestEligible,
      String p50,
      String p95) {}

  @GetMapping({"", "/"})
  ResponseEntity<String> overview(HttpServletRequest request) {
    console.guard(request, false);
    List<QueueHealth> health = console.admin.health(console.properties.getHealthWindow());
    Instant asOf = health.isEmpty() ? null : health.get(0).finishedCountsAsOf();
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("window", Format.age(console.properties.getHealthWindow()));
    model.put("asOf", asOf == null ? "not counted yet" : "as of " + asOf);
    model.put("chart", Chart.of(console.admin.completionsPerMinute(CHART_WINDOW)));
    model.put("rows", health.stream().map(this::row).toList());
    return console.page(request, "overview", "Overview", model, HttpStatus.OK);
  }

  private Row row(QueueHealth q) {
    String work = console.mount + "/work";
    Map<String, Link> counts = new LinkedHashMap<>();
    long[] values = {q.ready(), q.running(), q.done(), q.failed(), q.cancelled()};
    String[] states = {"ready", "running", "done", "failed", "cancelled"};
    for (int i = 0; i < states.length; i++) {
      counts.put(
          states[i],
          new Link(
              String.valueOf(values[i]),
              Format.url(work, "state", states[i], "queue", q.queue(), "kind", q.kind())));
    }
    List<Link> blocked = new ArrayList<>();
    q.blockedByReason().entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e ->
                blocked.add(
                    new Link(
                        e.getKey() + ": " + e.getValue(),
                        Format.url(
                            work, "queue", q.queue(), "kind", q.kind(), "blocked", e.getKey()))));
    List<Link> failures = new ArrayList<>();
    q.failuresByReason().entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e ->
                failures.add(
                    new Link(
                        e.getKey() + ": " + e.getValue(),
                        // No error kind was recorded: the list cannot filter on its absence.
                        e.getKey().equals("unknown")
                            ? null
                            : Format.url(
                                work,
                                "state",
                                "failed",
                                "queue",
                                q.queue(),
                                "kind",
                                q.kind(),
                                "errorKind",
                                e.getKey()))));
    Format f = Format.INSTANCE;
    return new Row(
        q,
        counts,
        blocked,
        failures,
        f.text(q.oldestEligibleAge()),
        Format.latency(q.completionP50()),
        Format.latency(q.completionP95()));
  }

  /**
   * Completions and failures per minute as stacked bars (done below, failed on top), laid out here
   * and drawn by the template as inline SVG: no script, no style attribute, so the page keeps its
   * CSP. Each bar carries its numbers as a title.
   */
  record Chart(
      int width, int height, long max, long done, long failed, String firstMinute, List<Bar> bars) {
    static final int BAR = 10;
    static final int HEIGHT = 120;

    /** One minute's bar: the done part and the failed part on top of it. */
    record Bar(String title, int x, int w, int doneY, int doneHeight, int failedY, int failedH) {}

    static Chart of(List<CompletionMinute> minutes) {
      long done = minutes.stream().mapToLong(CompletionMinute::done).sum();
      long failed = minutes.stream().mapToLong(CompletionMinute::failed).sum();
      long max = minutes.stream().mapToLong(m -> m.done() + m.failed()).max().orElse(0);
      List<Bar> bars = new ArrayList<>();
      for (int i = 0; i < minutes.size(); i++) {
        CompletionMinute m = minutes.get(i);
        int doneHeight = scaled(m.done(), max);
        int failedHeight = scaled(m.done() + m.failed(), max) - doneHeight;
        bars.add(
            new Bar(
                m.minute() + ": " + m.done() + " done, " + m.failed() + " failed",
                i * BAR + 1,
                BAR - 2,
                HEIGHT - doneHeight,
                doneHeight,
                HEIGHT - doneHeight - failedHeight,
                failedHeight));
      }
      return new Chart(
          Math.max(1, minutes.size()) * BAR,
          HEIGHT,
          max,
          done,
          failed,
          minutes.isEmpty() ? "\u2014" : minutes.get(0).minute().toString(),
          bars);
    }

    private static int scaled(long value, long max) {
      return max == 0 ? 0 : (int) Math.round((double) value * HEIGHT / max);
    }
  }
}
