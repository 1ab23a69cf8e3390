package dev.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.relay.Handler;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The alert rules and the dashboard in {@code observability/} query only what {@link RelayMetrics}
 * exports, under the names Prometheus sees: a renamed meter fails here, not silently on a
 * dashboard.
 */
@RelayDatabaseTest
class ShippedMonitoringTest {
  private static final Path ROOT = Path.of("..", "observability");
  private static final Path RULES = ROOT.resolve("prometheus/relay-alerts.yml");
  private static final Path DASHBOARD = ROOT.resolve("grafana/relay-dashboard.json");

  /** Quoted strings (label values, legends) and Grafana variables are not metric names. */
  private static final Pattern NOT_NAMES =
      Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`|\\$\\{?\\w+\\}?");

  private static final Pattern RELAY_NAME = Pattern.compile("\\brelay_[a-zA-Z0-9_:]*");

  @Test
  void everyMetricTheAlertRulesAndTheDashboardQueryIsExported(TestDatabase db) throws Exception {
    Set<String> exported = sampleNames(scrapeAfterARunThatMovesEveryMeter(db));

    Map<String, String> queries = new TreeMap<>();
    queries.putAll(ruleExpressions());
    queries.putAll(dashboardExpressions());
    assertThat(queries.keySet())
        .as("queries read from the shipped files")
        .anyMatch(k -> k.startsWith("rule "))
        .anyMatch(k -> k.startsWith("panel "));

    Map<String, Set<String>> missing = new TreeMap<>();
    List<String> withoutRelayMetric = new ArrayList<>();
    for (Map.Entry<String, String> q : queries.entrySet()) {
      Set<String> names = metricNames(q.getValue());
      if (names.isEmpty()) {
        withoutRelayMetric.add(q.getKey());
      }
      for (String name : names) {
        if (!exported.contains(name)) {
          missing.computeIfAbsent(name, n -> new TreeSet<>()).add(q.getKey());
        }
      }
    }
    assertThat(missing)
        .as("metric names queried but not exported (exported: %s)", exported)
        .isEmpty();
    assertThat(withoutRelayMetric).as("queries that name no relay_ metric").isEmpty();

    Set<String> onTheDashboard = new TreeSet<>();
    dashboardExpressions().values().forEach(e -> onTheDashboard.addAll(metricNames(e)));
    assertThat(onTheDashboard)
        .as("the dashboard shows every exported relay_ series")
        .containsAll(exported.stream().filter(n -> n.startsWith("relay_")).toList());
  }

  /** Prometheus prints each meter's description as its family's HELP line: none is empty. */
  @Test
  void everyExportedRelayFamilyHasAHelpLineSayingWhatItIs(TestDatabase db) throws Exception {
    List<String> lines = scrapeAfterARunThatMovesEveryMeter(db).lines().toList();
    Set<String> families = new TreeSet<>();
    Map<String, String> help = new TreeMap<>();
    for (String line : lines) {
      Matcher type = Pattern.compile("^# TYPE (relay_\\w+) ").matcher(line);
      if (type.find()) {
        families.add(type.group(1));
      }
      Matcher h = Pattern.compile("^# HELP (relay_\\w+) ?(.*)$").matcher(line);
      if (h.find()) {
        help.put(h.group(1), h.group(2).strip());
      }
    }
    assertThat(families).as("relay_ families scraped").hasSizeGreaterThan(10);
    assertThat(help.keySet()).containsAll(families);
    assertThat(help).allSatisfy((family, text) -> assertThat(text).as(family).isNotBlank());
  }

  @Test
  void metricNamesLeaveOutLabelsFunctionsStringsAndVariables() {
    assertThat(
            metricNames(
                "sum by (queue, kind, reason) (rate(relay_failures_total{queue=~\"$queue\","
                    + " reason!=\"relay_not_a_metric\"}[$__rate_interval]))"
                    + " / on (queue, kind) group_left sum by (queue, kind)"
                    + " (rate(relay_completions_total{kind=~\"${kind}\"}[5m]))"))
        .containsExactlyInAnyOrder("relay_failures_total", "relay_completions_total");
  }

  /**
   * The rules parse, and their unit tests (which alert fires on which series, after its {@code
   * for:}) pass. Fails, never skips, without promtool, as relay-console's browser test does without
   * Chromium: Debian's {@code prometheus} package ships it.
   */
  @Test
  void promtoolAcceptsTheRulesAndTheirUnitTests() throws Exception {
    Path dir = RULES.getParent();
    assertThat(promtool(dir, "check", "rules", "relay-alerts.yml")).contains("SUCCESS");
    assertThat(promtool(dir, "test", "rules", "relay-alerts.test.yml")).contains("SUCCESS");
  }

  private static String promtool(Path dir, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("promtool"));
    command.addAll(List.of(args));
    Process p;
    try {
      p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new AssertionError(
          "promtool is not on the PATH: install it (Debian: apt-get install prometheus)", e);
    }
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("promtool finished").isTrue();
    assertThat(p.exitValue())
        .as("promtool %s exit status; output:%n%s", String.join(" ", args), output)
        .isZero();
    return output;
  }

  /** Runs work through every path a meter counts: done, retry, fail, throw, deadline, takeover. */
  private static String scrapeAfterARunThatMovesEveryMeter(TestDatabase db) throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Admin admin = Admin.create(db.dataSource(), db.schema());
    RelayMetrics metrics = RelayMetrics.builder(admin).build();
    metrics.bindTo(registry);

    CountDownLatch hungStarted = new CountDownLatch(1);
    CountDownLatch unblock = new CountDownLatch(1);
    KindPolicy policy =
        KindPolicy.DEFAULT
            .withBackoff(Duration.ofMillis(10), Duration.ofMillis(20))
            .withMaxRunTime(Duration.ofMillis(700));
    ScriptedMail scripted = new ScriptedMail();
    Handler handler =
        claim -> {
          if (claim.workId().equals("m-hang") && claim.generation() == 1) {
            hungStarted.countDown();
            awaitIgnoringInterrupts(unblock); // a hung call: its lease runs out
          }
          return scripted.handle(claim);
        };
    enqueue(db, Work.of("m-hang", "mail", "{}"));
    try (var poolA = db.newDataSource("relay-a", 4);
        var poolB = db.newDataSource("relay-b", 4);
        Relay a =
            worker(db, poolA, "a", metrics, policy, handler).concurrency(1).bufferSize(0).build();
        Relay b = worker(db, poolB, "b", metrics, policy, handler).build()) {
      a.start();
      assertThat(hungStarted.await(60, TimeUnit.SECONDS)).isTrue();
      enqueue(
          db,
          Work.of("m-done", "mail", "{}"),
          Work.of("m-fail", "mail", "{}"),
          Work.of("m-retry", "mail", "{}"),
          Work.of("m-throw", "mail", "{}"),
          Work.of("m-late", "mail", "{}").deadline(Instant.now().minusSeconds(60)));
      b.start(); // takes m-hang over once a stops renewing it and the lease ends
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM {schema}.work WHERE state IN ('done', 'failed')")
                      == 6);
      unblock.countDown(); // the hung attempt returns late: its done is a stale write
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> count(registry, "relay.writes.stale") == 1);
    } finally {
      unblock.countDown();
    }
    admin.refreshSummary();
    metrics.refresh();
    return registry.scrape();
  }

  /** A worker with a short lease, so a hung attempt is taken over within seconds. */
  private static Relay.Builder worker(
      TestDatabase db,
      DataSource pool,
      String workerId,
      RelayMetrics metrics,
      KindPolicy policy,
      Handler handler) {
    return Relay.builder(pool)
        .schema(db.schema())
        .workerId(workerId)
        .lease(Duration.ofSeconds(2))
        .renewInterval(Duration.ofMillis(250))
        .pollInterval(Duration.ofMillis(100))
        .listener(metrics.listener())
        .handle("mail", policy, handler);
  }

  private static void enqueue(TestDatabase db, Work... work) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(c, List.of(work));
      c.commit();
    }
  }

  private static double count(PrometheusMeterRegistry registry, String name) {
    return registry.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    while (true) {
      try {
        if (latch.await(60, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        // a hung call that does not answer interrupts, so the takeover happens
      }
    }
  }

  /** The series names in Prometheus text output: each sample line's name. */
  static Set<String> sampleNames(String scrape) {
    Set<String> names = new TreeSet<>();
    for (String line : scrape.split("\n")) {
      if (!line.isBlank() && !line.startsWith("#")) {
        names.add(line.split("[{ ]", 2)[0]);
      }
    }
    return names;
  }

  /** The {@code relay_} metric names a PromQL expression reads. */
  static Set<String> metricNames(String expr) {
    Set<String> names = new TreeSet<>();
    Matcher m = RELAY_NAME.matcher(NOT_NAMES.matcher(expr).replaceAll(" "));
    while (m.find()) {
      names.add(m.group());
    }
    return names;
  }

  private static Map<String, String> ruleExpressions() throws IOException {
    Map<String, String> exprs = new TreeMap<>();
    JsonNode rules = new YAMLMapper().readTree(RULES.toFile());
    for (JsonNode group : rules.path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        String name =
            rule.has("alert") ? rule.path("alert").asText() : rule.path("record").asText();
        exprs.put("rule " + name, rule.path("expr").asText());
      }
    }
    return exprs;
  }

  /** Every {@code expr} in the dashboard (panels, rows) and every template variable's query. */
  private static Map<String, String> dashboardExpressions() throws IOException {
    Map<String, String> exprs = new TreeMap<>();
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    collectPanels(dashboard.path("panels"), exprs);
    for (JsonNode variable : dashboard.path("templating").path("list")) {
      if (variable.path("type").asText().equals("query")) {
        JsonNode q = variable.path("query");
        exprs.put(
            "variable " + variable.path("name").asText(),
            q.isObject() ? q.path("query").asText() : q.asText());
      }
    }
    return exprs;
  }

  private static void collectPanels(JsonNode panels, Map<String, String> exprs) {
    for (JsonNode panel : panels) {
      for (JsonNode target : panel.path("targets")) {
        exprs.put(
            "panel " + panel.path("title").asText() + " " + target.path("refId").asText(),
            target.path("expr").asText());
      }
      collectPanels(panel.path("panels"), exprs);
    }
  }
}
