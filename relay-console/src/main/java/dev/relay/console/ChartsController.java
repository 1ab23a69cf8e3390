package dev.relay.console;

import dev.relay.admin.ChartPair;
import dev.relay.admin.ChartPoint;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Charts;
import dev.relay.admin.InvalidAdminRequestException;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * Charts per queue and kind over 1 h, 24 h or 7 d: throughput (done, failed, cancelled per point),
 * creation-to-completion p50 and p95 per point, and failures by reason, read through {@link
 * dev.relay.admin.Admin#charts} from the rollup that the maintenance leader keeps (never from the
 * work table). The charts are laid out here and drawn by the template as inline SVG: no script, no
 * style attribute, so the page keeps its CSP.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class ChartsController {
  /** The plotting area's width and each chart's height, in pixels. */
  static final int WIDTH = 720;

  static final int HEIGHT = 140;

  /** The longest failure-reason bar. */
  static final int REASON_BAR = 320;

  private static final DateTimeFormatter MINUTE =
      DateTimeFormatter.ofPattern("MMM d HH:mm", Locale.ROOT).withZone(ZoneOffset.UTC);

  private final Console console;

  ChartsController(Console console) {
    this.console = console;
  }

  /** A link that may be the current choice. */
  record Choice(String label, String href, boolean current) {}

  /** One point's stacked bar: done at the bottom, failed above it, cancelled on top. */
  record Bar(
      String title,
      String x,
      String w,
      int doneY,
      int doneH,
      int failedY,
      int failedH,
      int cancelledY,
      int cancelledH) {}

  /** The throughput chart. */
  record Throughput(long max, List<Bar> bars) {}

  /** One point of a latency line. */
  record Dot(String x, int y, String title) {}

  /** The latency chart: a line per percentile, in runs of consecutive points with done work. */
  record Latency(
      String max, List<String> p50, List<String> p95, List<Dot> dots50, List<Dot> dots95) {}

  /** A failure reason's bar and the failed work it links to (none for "unknown"). */
  record Reason(String reason, long count, int width, String href) {}

  /** A (queue, kind) with its totals and the links to its charts. */
  record Pair(ChartPair pair, String both, String queue, String kind, boolean current) {}

  @GetMapping("/charts")
  ResponseEntity<String> charts(
      HttpServletRequest request,
      @RequestParam(name = "window", required = false) String windowParam,
      @RequestParam(name = "queue", required = false) String queueParam,
      @RequestParam(name = "kind", required = false) String kindParam) {
    console.guard(request, false);
    ChartWindow window =
        windowParam == null || windowParam.isEmpty()
            ? ChartWindow.HOUR
            : ChartWindow.parse(windowParam)
                .orElseThrow(
                    () ->
                        new InvalidAdminRequestException(
                            "window", "must be 1h, 24h or 7d, was " + windowParam));
    String queue = blankToNull(queueParam);
    String kind = blankToNull(kindParam);
    Charts charts = console.admin.charts(window, queue, kind);
    String base = console.mount + "/charts";

    List<Choice> windows = new ArrayList<>();
    for (ChartWindow w : ChartWindow.values()) {
      windows.add(
          new Choice(
              w.label(),
              Format.url(base, "window", w.label(), "queue", queue, "kind", kind),
              w == window));
    }
    List<Pair> pairs =
        charts.pairs().stream()
            .map(
                p ->
                    new Pair(
                        p,
                        Format.url(
                            base, "window", window.label(), "queue", p.queue(), "kind", p.kind()),
                        Format.url(base, "window", window.label(), "queue", p.queue()),
                        Format.url(base, "window", window.label(), "kind", p.kind()),
                        p.queue().equals(queue) && p.kind().equals(kind)))
            .toList();

    Map<String, Object> model = new LinkedHashMap<>();
    model.put("window", window);
    model.put("windows", windows);
    model.put("scope", scope(queue, kind));
    model.put(
        "all", queue == null && kind == null ? null : Format.url(base, "window", window.label()));
    model.put("charts", charts);
    model.put("p50", Format.latency(charts.p50()));
    model.put("p95", Format.latency(charts.p95()));
    model.put("width", WIDTH);
    model.put("height", HEIGHT);
    model.put("first", MINUTE.format(charts.from()));
    model.put("last", MINUTE.format(charts.from().plus(window.span())));
    model.put(
        "foldedThrough",
        charts.foldedThrough() == null
            ? "nothing folded yet"
            : "counted through " + MINUTE.format(charts.foldedThrough()) + " UTC");
    model.put("throughput", throughput(charts, window));
    model.put("latency", latencyChart(charts, window));
    model.put("reasons", reasons(charts, queue, kind));
    model.put("pairs", pairs);
    model.put("maxPairs", dev.relay.admin.Admin.MAX_CHART_PAIRS);
    return console.page(request, "charts", "Charts", model, HttpStatus.OK);
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static String scope(String queue, String kind) {
    if (queue == null && kind == null) {
      return "every queue and kind";
    }
    if (queue == null) {
      return "kind " + kind + ", every queue";
    }
    if (kind == null) {
      return "queue " + queue + ", every kind";
    }
    return "queue " + queue + ", kind " + kind;
  }

  private static String px(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  private static int scaled(long value, long max) {
    return max == 0 ? 0 : (int) Math.round((double) value * HEIGHT / max);
  }

  private static Throughput throughput(Charts charts, ChartWindow window) {
    List<ChartPoint> points = charts.points();
    long max =
        points.stream().mapToLong(p -> p.done() + p.failed() + p.cancelled()).max().orElse(0);
    double step = (double) WIDTH / points.size();
    List<Bar> bars = new ArrayList<>();
    for (int i = 0; i < points.size(); i++) {
      ChartPoint p = points.get(i);
      if (p.done() + p.failed() + p.cancelled() == 0) {
        continue;
      }
      int doneH = scaled(p.done(), max);
      int failedH = scaled(p.done() + p.failed(), max) - doneH;
      int cancelledH = scaled(p.done() + p.failed() + p.cancelled(), max) - doneH - failedH;
      bars.add(
          new Bar(
              title(p.start(), window)
                  + ": "
                  + p.done()
                  + " done, "
                  + p.failed()
                  + " failed, "
                  + p.cancelled()
                  + " cancelled",
              px(i * step + step * 0.1),
              px(Math.max(1, step * 0.8)),
              HEIGHT - doneH,
              doneH,
              HEIGHT - doneH - failedH,
              failedH,
              HEIGHT - doneH - failedH - cancelledH,
              cancelledH));
    }
    return new Throughput(max, bars);
  }

  private static String title(Instant start, ChartWindow window) {
    return MINUTE.format(start) + "\u2013" + MINUTE.format(start.plus(window.step())) + " UTC";
  }

  private static Latency latencyChart(Charts charts, ChartWindow window) {
    List<ChartPoint> points = charts.points();
    long maxNanos =
        points.stream()
            .filter(p -> p.p95() != null)
            .mapToLong(p -> p.p95().toNanos())
            .max()
            .orElse(0);
    double step = (double) WIDTH / points.size();
    List<String> p50 = new ArrayList<>();
    List<String> p95 = new ArrayList<>();
    List<Dot> dots50 = new ArrayList<>();
    List<Dot> dots95 = new ArrayList<>();
    StringBuilder run50 = new StringBuilder();
    StringBuilder run95 = new StringBuilder();
    for (int i = 0; i < points.size(); i++) {
      ChartPoint p = points.get(i);
      if (p.p50() == null) {
        flush(run50, p50);
        flush(run95, p95);
        continue;
      }
      String x = px(i * step + step / 2);
      int y50 = HEIGHT - y(p.p50(), maxNanos);
      int y95 = HEIGHT - y(p.p95(), maxNanos);
      run50.append(x).append(',').append(y50).append(' ');
      run95.append(x).append(',').append(y95).append(' ');
      String when = title(p.start(), window);
      dots50.add(new Dot(x, y50, when + ": p50 " + Format.latency(p.p50())));
      dots95.add(new Dot(x, y95, when + ": p95 " + Format.latency(p.p95())));
    }
    flush(run50, p50);
    flush(run95, p95);
    return new Latency(
        maxNanos == 0 ? "0" : Format.latency(Duration.ofNanos(maxNanos)), p50, p95, dots50, dots95);
  }

  private static int y(Duration d, long maxNanos) {
    return maxNanos == 0 ? 0 : (int) Math.round((double) d.toNanos() * HEIGHT / maxNanos);
  }

  private static void flush(StringBuilder run, List<String> runs) {
    if (run.length() > 0) {
      runs.add(run.toString().trim());
      run.setLength(0);
    }
  }

  private List<Reason> reasons(Charts charts, String queue, String kind) {
    long max =
        charts.failuresByReason().values().stream().mapToLong(Long::longValue).max().orElse(0);
    List<Reason> reasons = new ArrayList<>();
    charts
        .failuresByReason()
        .forEach(
            (reason, n) ->
                reasons.add(
                    new Reason(
                        reason,
                        n,
                        max == 0 ? 0 : (int) Math.max(1, Math.round((double) n * REASON_BAR / max)),
                        // No error kind was recorded: the list cannot filter on its absence.
                        reason.equals("unknown")
                            ? null
                            : Format.url(
                                console.mount + "/work",
                                "state",
                                "failed",
                                "queue",
                                queue,
                                "kind",
                                kind,
                                "errorKind",
                                reason))));
    return reasons;
  }
}
