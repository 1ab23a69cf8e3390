package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.console.Chromium;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;

/**
 * The picture of the shipped Grafana dashboard in {@code docs/operations.md}: Grafana cannot be
 * installed on the build machines (no Debian or npm package), so this test renders the dashboard
 * JSON's own panel definitions (rows, titles, layout, units, queries, thresholds) into a page, with
 * the values of each query's metrics scraped from {@code relay serve}'s {@code
 * /actuator/prometheus} after a small real run (work done, retried, failed and waiting), and saves
 * a screenshot from headless Chromium as {@code target/dashboard/relay-dashboard.png}. It is a
 * rendering of the panel definitions, not Grafana: no PromQL is evaluated (a rate panel shows the
 * counter's total so far). With {@code -Drelay.docs.update=true} it also replaces {@code
 * docs/images/relay-dashboard.png}:
 *
 * <pre>
 * ./mvnw -pl relay-serve -am test -Dtest=DashboardRenderingTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Drelay.docs.update=true
 * </pre>
 */
@RelayDatabaseTest
class DashboardRenderingTest {
  private static final Path DASHBOARD =
      Path.of("..", "observability", "grafana", "relay-dashboard.json");
  private static final Path DOCS_IMAGE = Path.of("..", "docs", "images", "relay-dashboard.png");
  private static final Pattern METRIC = Pattern.compile("\\brelay_[a-z_]+");
  private static final Pattern MATCHER = Pattern.compile("(\\w+)=~?\"([^\"$]+)\"");
  private static final Pattern SAMPLE =
      Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})?\\s+(\\S+)");

  @Test
  void theShippedDashboardsPanelsRenderWithValuesFromARealRun(TestDatabase db, @TempDir Path dir)
      throws Exception {
    Map<String, Integer> tries = new ConcurrentHashMap<>();
    HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    receiver.createContext(
        "/mail",
        exchange -> {
          String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
          exchange.getRequestBody().readAllBytes();
          int n = tries.merge(key, 1, Integer::sum);
          // bounces are refused for good; every other mail is busy once, then accepted
          int status = key.startsWith("bounce") ? 422 : n == 1 ? 503 : 200;
          byte[] body = "{\"email_id\": \"m\"}".getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "application/json");
          exchange.sendResponseHeaders(status, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    receiver.start();
    Path config = dir.resolve("application.yml");
    Files.writeString(
        config,
        """
        server: {port: 0}
        relay:
          queues: [default, mail]
          concurrency: 2
          poll-interval: 200ms
          shutdown-grace: 5s
          metrics-refresh-interval: 1s
          kinds:
            order_received: {handler: log}
            mail:
              handler: http
              url: 'http://127.0.0.1:%d/mail'
              backoff-base: 100ms
              backoff-cap: 200ms
          console: {enabled: false}
        """
            .formatted(receiver.getAddress().getPort()));
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      for (int i = 0; i < 40; i++) {
        outbox.enqueue(c, Work.of("order-" + i, "order_received", "{\"order\": " + i + "}"));
      }
      for (int i = 0; i < 12; i++) {
        outbox.enqueue(c, Work.of("mail-" + i, "mail", "{\"to\": " + i + "}").queue("mail"));
      }
      for (int i = 0; i < 3; i++) {
        outbox.enqueue(c, Work.of("bounce-" + i, "mail", "{}").queue("mail"));
      }
      for (int i = 0; i < 5; i++) {
        outbox.enqueue(c, Work.of("waiting-" + i, "unserved", "{}")); // no worker runs it
      }
      c.commit();
    }

    Map<String, List<String[]>> scraped;
    try (Serving serving = ServeTest.serve(db, config, new ByteArrayOutputStream())) {
      await()
          .atMost(Duration.ofSeconds(90))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM {schema}.work WHERE state IN ('done', 'failed')")
                      == 55);
      String base = "http://127.0.0.1:" + serving.port();
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      // the depth gauges are refreshed from the database every second
      AtomicReference<Map<String, List<String[]>>> last = new AtomicReference<>();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> {
                last.set(samples(client, base));
                return last.get().getOrDefault("relay_work_depth", List.of()).stream()
                    .anyMatch(s -> s[0].contains("state=\"failed\"") && !s[1].startsWith("0"));
              });
      scraped = last.get();
    } finally {
      receiver.stop(0);
    }

    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    Path page = dir.resolve("dashboard.html");
    Files.writeString(page, html(dashboard, scraped));
    Path png = Path.of("target", "dashboard", "relay-dashboard.png");
    Files.createDirectories(png.getParent());
    List<String> titles = new ArrayList<>();
    for (JsonNode p : dashboard.path("panels")) {
      if (!p.path("type").asText().equals("row")) {
        titles.add(p.path("title").asText());
      }
    }
    try (Chromium chromium = Chromium.start()) {
      WebDriver web = chromium.web();
      web.manage().window().setSize(new Dimension(1440, 1000));
      web.get(page.toUri().toString());
      // the whole dashboard in one picture: the window as tall as the page
      long height =
          ((Number)
                  ((JavascriptExecutor) web)
                      .executeScript("return document.documentElement.scrollHeight"))
              .longValue();
      web.manage().window().setSize(new Dimension(1440, (int) height + 140));
      assertThat(web.findElements(By.cssSelector(".panel h3")))
          .extracting(e -> e.getText())
          .containsExactlyElementsOf(titles);
      // the real run's values are on the page: work depth by state and claims per kind
      String text = web.findElement(By.tagName("body")).getText();
      assertThat(text).contains("state=failed").contains("kind=order_received");
      Files.write(png, ((TakesScreenshot) web).getScreenshotAs(OutputType.BYTES));
    }
    assertThat(Files.size(png)).isGreaterThan(10_000);
    if (Boolean.getBoolean("relay.docs.update")) {
      Files.copy(png, DOCS_IMAGE, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  /** Every {@code relay_} sample of the scrape: metric name to (labels, value). */
  private static Map<String, List<String[]>> samples(HttpClient client, String base)
      throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(URI.create(base + "/actuator/prometheus")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    Map<String, List<String[]>> out = new LinkedHashMap<>();
    for (String line : r.body().split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (!line.startsWith("#") && m.find() && m.group(1).startsWith("relay_")) {
        String labels = m.group(2) == null ? "" : m.group(2);
        out.computeIfAbsent(m.group(1), k -> new ArrayList<>())
            .add(new String[] {labels, m.group(3)});
      }
    }
    return out;
  }

  /** The dashboard as a page: its grid, each panel's definition and its metrics' values. */
  private static String html(JsonNode dashboard, Map<String, List<String[]>> scraped) {
    StringBuilder h = new StringBuilder();
    h.append(
        """
        <!doctype html><html><head><meta charset="utf-8"><title>Relay dashboard</title><style>
        body{margin:0;background:#111217;color:#d8d9da;font:12px/1.35 sans-serif}
        header{padding:10px 16px;border-bottom:1px solid #2c2f36;display:flex;gap:24px;align-items:baseline}
        header h1{font-size:17px;margin:0;color:#fff}
        header .note{color:#f5b73d}
        .vars span{background:#22252b;border:1px solid #34373d;padding:2px 8px;margin-right:6px}
        .grid{display:grid;grid-template-columns:repeat(24,1fr);grid-auto-rows:24px;gap:6px;padding:8px 12px}
        .row{align-self:end;font-size:14px;font-weight:bold;color:#fff;border-bottom:1px solid #2c2f36}
        .panel{background:#181b1f;border:1px solid #2c2f36;border-radius:3px;padding:6px 8px;overflow:hidden}
        .panel h3{margin:0 0 4px;font-size:13px;color:#fff}
        .unit{color:#8e8e8e;font-size:11px}
        code{display:block;color:#6ccf8e;font-size:10px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
        .bar{display:flex;align-items:center;gap:6px;margin-top:2px;font-size:11px}
        .bar .l{flex:0 0 58%;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
        .bar .b{height:9px;background:#73bf69}
        .bar .v{color:#fff}
        .none{color:#8e8e8e;font-style:italic;margin-top:4px}
        .thr{color:#f2495c;font-size:11px}
        </style></head><body>
        """);
    h.append("<header><h1>")
        .append(esc(dashboard.path("title").asText()))
        .append("</h1><div class=vars>");
    for (JsonNode v : dashboard.path("templating").path("list")) {
      h.append("<span>").append(esc(v.path("name").asText())).append(": All</span>");
    }
    h.append(
        "</div><div class=note>A rendering of observability/grafana/relay-dashboard.json's panel"
            + " definitions with the metrics' current values from a test run, not Grafana</div>"
            + "</header><div class=grid>");
    for (JsonNode p : dashboard.path("panels")) {
      JsonNode g = p.path("gridPos");
      String place =
          "grid-column:"
              + (g.path("x").asInt() + 1)
              + " / span "
              + g.path("w").asInt()
              + ";grid-row:"
              + (g.path("y").asInt() + 1)
              + " / span "
              + g.path("h").asInt();
      if (p.path("type").asText().equals("row")) {
        h.append("<div class=row style='").append(place).append("'>");
        h.append(esc(p.path("title").asText())).append("</div>");
        continue;
      }
      h.append("<div class=panel style='").append(place).append("'><h3>");
      h.append(esc(p.path("title").asText())).append("</h3>");
      JsonNode defaults = p.path("fieldConfig").path("defaults");
      h.append("<div class=unit>").append(esc(p.path("type").asText()));
      if (defaults.has("unit")) {
        h.append(", unit ").append(esc(defaults.path("unit").asText()));
      }
      h.append("</div>");
      for (JsonNode step : defaults.path("thresholds").path("steps")) {
        if (!step.path("value").isNull() && !step.path("value").isMissingNode()) {
          h.append("<div class=thr>threshold ")
              .append(esc(step.path("value").asText()))
              .append(" (")
              .append(esc(step.path("color").asText()))
              .append(")</div>");
        }
      }
      Set<String> metrics = new LinkedHashSet<>();
      Map<String, Pattern> matchers = new LinkedHashMap<>();
      for (JsonNode t : p.path("targets")) {
        String expr = t.path("expr").asText();
        h.append("<code title='").append(esc(expr)).append("'>").append(esc(expr));
        h.append("</code>");
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
          metrics.add(m.group());
        }
        Matcher fixed = MATCHER.matcher(expr); // state=~"ready|running"; not the variables
        while (fixed.find()) {
          matchers.put(fixed.group(1), Pattern.compile(fixed.group(2)));
        }
      }
      h.append(values(metrics, matchers, scraped));
      h.append("</div>");
    }
    return h.append("</div></body></html>").toString();
  }

  /** The largest samples of the panel's metrics (sums and counts of a histogram are left out). */
  private static String values(
      Set<String> metrics, Map<String, Pattern> matchers, Map<String, List<String[]>> scraped) {
    List<String[]> rows = new ArrayList<>();
    for (String metric : metrics) {
      if (metric.endsWith("_sum") || metric.endsWith("_count")) {
        continue;
      }
      for (String[] s : scraped.getOrDefault(metric, List.of())) {
        double v = Double.parseDouble(s[1]);
        if (v > 0 && matches(s[0], matchers)) {
          rows.add(new String[] {metric + " " + labels(s[0]), s[1]});
        }
      }
    }
    if (rows.isEmpty()) {
      return "<div class=none>no samples in this run</div>";
    }
    rows.sort((a, b) -> Double.compare(Double.parseDouble(b[1]), Double.parseDouble(a[1])));
    double max = Double.parseDouble(rows.get(0)[1]);
    StringBuilder h = new StringBuilder();
    for (String[] r : rows.subList(0, Math.min(5, rows.size()))) {
      double v = Double.parseDouble(r[1]);
      h.append("<div class=bar><span class=l title='")
          .append(esc(r[0]))
          .append("'>")
          .append(esc(r[0]))
          .append("</span><span class=b style='width:")
          .append(Math.max(2, Math.round(30 * v / max)))
          .append("%'></span><span class=v>")
          .append(v == Math.rint(v) ? Long.toString((long) v) : String.format("%.3f", v))
          .append("</span></div>");
    }
    return h.toString();
  }

  /** Whether a sample's labels satisfy the query's fixed label matchers. */
  private static boolean matches(String braces, Map<String, Pattern> matchers) {
    for (Map.Entry<String, Pattern> e : matchers.entrySet()) {
      Matcher label = Pattern.compile(e.getKey() + "=\"([^\"]*)\"").matcher(braces);
      if (!label.find() || !e.getValue().matcher(label.group(1)).matches()) {
        return false;
      }
    }
    return true;
  }

  /** {@code {kind="mail",queue="mail"}} as {@code kind=mail queue=mail}. */
  private static String labels(String braces) {
    return braces.replaceAll("[{}]", "").replace("\"", "").replace(",", " ");
  }

  private static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;");
  }
}
