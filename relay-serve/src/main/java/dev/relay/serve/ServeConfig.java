package dev.relay.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.relay.FlowLimits;
import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import dev.relay.Milestone;
import dev.relay.Relay;
import dev.relay.Schedule;
import dev.relay.ScheduleException;
import dev.relay.UnknownOutcomePolicy;
import dev.relay.micrometer.RelayMetrics;
import dev.relay.schedule.Scheduler;
import dev.relay.transport.http.HttpRoute;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.springframework.boot.convert.DurationStyle;

/**
 * What {@code relay serve} runs, read from a JSON file:
 *
 * <pre>{@code
 * {
 *   "queues": ["default"],
 *   "concurrency": 8,
 *   "lease": "60s",
 *   "poll_interval": "2s",
 *   "shutdown_grace": "30s",
 *   "bind": "127.0.0.1",
 *   "port": 9464,
 *   "maintenance_interval": "1m",
 *   "metrics_refresh_interval": "15s",
 *   "retention": {"work": "7d", "history": "30d", "identity": "90d"},
 *   "kinds": {
 *     "order_received": {"handler": "log", "max_attempts": 8, "backoff_base": "2s",
 *                        "backoff_cap": "10m", "max_elapsed": "12h", "max_run_time": "30m",
 *                        "dedup_horizon": "24h", "unknown_outcome": "retry",
 *                        "max_running": 4, "max_running_per_group": 1,
 *                        "rate_limit": 100, "rate_interval": "1m"},
 *     "mail": {"handler": "http", "url": "http://127.0.0.1:8025/mail",
 *              "receiver_ref_field": "email_id", "milestone": "queued",
 *              "connect_timeout": "2s", "request_timeout": "10s", "fencing": "generation"}
 *   },
 *   "console": {"users": [
 *     {"name": "ops", "hash": "$2a$10$...", "role": "operator"},
 *     {"name": "support", "hash": "$2a$10$...", "role": "viewer"}]},
 *   "schedules": {
 *     "nightly-report": {"kind": "report", "cron": "30 2 * * *", "zone": "Europe/Berlin"},
 *     "stock-sync": {"kind": "stock_sync", "every": "5m", "missed": "each 1h"}
 *   }
 * }
 * }</pre>
 *
 * A schedule has a kind and either {@code cron} with {@code zone} or {@code every}; {@code missed}
 * is {@code skip}, {@code latest} (the default) or {@code each <window>} (see docs/scheduling.md).
 * Every field but {@code kinds} is optional. Unknown fields are refused, so a typo is an error and
 * not a silent default. {@code http_port}, the name of {@code port} before {@code relay serve}
 * became a Spring Boot application, is still read. A console user has a bcrypt {@code hash} ({@code
 * relay passwd} prints one), never a password, and the role {@code viewer} or {@code operator}. A
 * config must name at least one console user or turn the console off with {@code "console":
 * {"enabled": false}}; without a {@code console} section {@code relay serve} refuses to start.
 */
record ServeConfig(
    List<String> queues,
    int concurrency,
    Duration lease,
    Duration pollInterval,
    Duration shutdownGrace,
    String bind,
    Integer port,
    List<User> users,
    Duration maintenanceInterval,
    Duration metricsRefreshInterval,
    Duration workRetention,
    Duration historyRetention,
    Duration identityHorizon,
    Map<String, KindConfig> kinds,
    Map<String, ScheduleConfig> schedules) {

  /**
   * The handlers a kind may name: {@code log} (logs and completes) and {@code http} (the HTTP
   * transport: POST to {@code url} with Idempotency-Key and a fencing token).
   */
  static final List<String> HANDLERS = List.of("log", "http");

  /** One kind: its handler, its policy, and for {@code http} its route (otherwise null). */
  record KindConfig(String handler, KindPolicy policy, HttpRoute route) {}

  /** One console user: a name, a bcrypt hash and a role, {@code viewer} or {@code operator}. */
  record User(String name, String hash, String role) {}

  /** The roles a console user may have. */
  static final List<String> ROLES = List.of("viewer", "operator");

  /** The address the server binds when the config names none. */
  static final String DEFAULT_BIND = "127.0.0.1";

  /** The port the server listens on when the config names none. */
  static final int DEFAULT_PORT = 9464;

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern BCRYPT = Pattern.compile("\\$2[aby]?\\$\\d{2}\\$[./A-Za-z0-9]{53}");

  /** One schedule: the kind of the work its slots become, and its timing and policy. */
  record ScheduleConfig(String kind, Schedule schedule) {}

  private static final Set<String> TOP =
      Set.of(
          "queues",
          "concurrency",
          "lease",
          "poll_interval",
          "shutdown_grace",
          "http_port",
          "bind",
          "port",
          "console",
          "maintenance_interval",
          "metrics_refresh_interval",
          "retention",
          "kinds",
          "schedules");
  private static final Set<String> CONSOLE = Set.of("users", "enabled");
  private static final Set<String> USER = Set.of("name", "hash", "role");
  private static final Set<String> SCHEDULE = Set.of("kind", "cron", "zone", "every", "missed");
  private static final Set<String> RETENTION = Set.of("work", "history", "identity");
  private static final Set<String> KIND =
      Set.of(
          "handler",
          "max_attempts",
          "backoff_base",
          "backoff_cap",
          "max_elapsed",
          "max_run_time",
          "dedup_horizon",
          "unknown_outcome",
          "max_running",
          "max_running_per_group",
          "rate_limit",
          "rate_interval",
          "url",
          "connect_timeout",
          "request_timeout",
          "receiver_ref_header",
          "receiver_ref_field",
          "milestone",
          "fencing");

  /**
   * Parses {@code json} ({@code source} names it in messages).
   *
   * @throws IllegalArgumentException naming the first problem
   */
  static ServeConfig parse(String json, String source) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(source + " is not JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(source + " must hold one JSON object");
    }
    known(root, TOP, source);
    List<String> queues = new ArrayList<>();
    JsonNode q = root.get("queues");
    if (q == null) {
      queues.addAll(Relay.DEFAULT_QUEUES);
    } else if (q.isArray() && !q.isEmpty()) {
      q.forEach(n -> queues.add(n.asText()));
    } else {
      throw new IllegalArgumentException(source + ": queues must be a non-empty array of names");
    }
    JsonNode retention = root.path("retention");
    if (!retention.isMissingNode()) {
      if (!retention.isObject()) {
        throw new IllegalArgumentException(source + ": retention must be an object");
      }
      known(retention, RETENTION, source + " retention");
    }
    JsonNode kindsNode = root.get("kinds");
    if (kindsNode == null || !kindsNode.isObject() || kindsNode.isEmpty()) {
      throw new IllegalArgumentException(
          source
              + ": kinds must name at least one kind, like {\"kinds\": {\"k\": {\"handler\":"
              + " \"log\"}}}");
    }
    Map<String, KindConfig> kinds = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : kindsNode.properties()) {
      kinds.put(e.getKey(), kind(e.getKey(), e.getValue(), source));
    }
    Map<String, ScheduleConfig> schedules = new LinkedHashMap<>();
    JsonNode schedulesNode = root.path("schedules");
    if (!schedulesNode.isMissingNode()) {
      if (!schedulesNode.isObject()) {
        throw new IllegalArgumentException(source + ": schedules must be an object");
      }
      for (Map.Entry<String, JsonNode> e : schedulesNode.properties()) {
        schedules.put(e.getKey(), schedule(e.getKey(), e.getValue(), source));
      }
    }
    if (root.has("http_port") && root.has("port")) {
      throw new IllegalArgumentException(
          source + ": give port (http_port is its old name), not both");
    }
    String portField = root.has("http_port") ? "http_port" : "port";
    Integer port = null;
    if (root.has(portField)) {
      port = integer(root, portField, source);
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException(
            source + ": " + portField + " must be 0-65535, was " + port);
      }
    }
    String bind = DEFAULT_BIND;
    if (root.has("bind")) {
      bind = bind(root.get("bind"), source);
    }
    List<User> users = users(root.get("console"), source);
    Duration maintenance = duration(root, "maintenance_interval", null, source);
    within(
        maintenance, "maintenance_interval", Duration.ofSeconds(1), Duration.ofHours(24), source);
    Duration refresh =
        duration(root, "metrics_refresh_interval", RelayMetrics.DEFAULT_REFRESH_INTERVAL, source);
    within(refresh, "metrics_refresh_interval", Duration.ofSeconds(1), Duration.ofHours(1), source);
    return new ServeConfig(
        List.copyOf(queues),
        root.has("concurrency") ? integer(root, "concurrency", source) : Relay.DEFAULT_CONCURRENCY,
        duration(root, "lease", Relay.DEFAULT_LEASE, source),
        duration(root, "poll_interval", Relay.DEFAULT_POLL_INTERVAL, source),
        duration(root, "shutdown_grace", Relay.DEFAULT_SHUTDOWN_GRACE, source),
        bind,
        port,
        users,
        duration(root, "maintenance_interval", null, source),
        duration(root, "metrics_refresh_interval", RelayMetrics.DEFAULT_REFRESH_INTERVAL, source),
        duration(retention, "work", null, source + " retention"),
        duration(retention, "history", null, source + " retention"),
        duration(retention, "identity", null, source + " retention"),
        kinds,
        schedules);
  }

  /**
   * The console users; an empty list only when the config turns the console off explicitly ({@code
   * "console": {"enabled": false}}). A config without a {@code console} section is refused: the
   * console never runs without sign-in, and a server that silently starts without the console it
   * was meant to have is a surprise found late.
   */
  private static List<User> users(JsonNode console, String source) {
    if (console == null) {
      throw new IllegalArgumentException(
          source
              + ": console is missing: give the console's users, like \"console\": {\"users\":"
              + " [{\"name\": \"ops\", \"hash\": \"<relay passwd prints it>\", \"role\":"
              + " \"operator\"}]} (the console never runs without sign-in), or run without a"
              + " console with \"console\": {\"enabled\": false}");
    }
    String where = source + " console";
    if (!console.isObject()) {
      throw new IllegalArgumentException(where + " must be an object like {\"users\": [...]}");
    }
    known(console, CONSOLE, where);
    JsonNode enabled = console.get("enabled");
    if (enabled != null && !enabled.isBoolean()) {
      throw new IllegalArgumentException(where + ".enabled must be true or false");
    }
    if (enabled != null && !enabled.booleanValue()) {
      if (console.has("users")) {
        throw new IllegalArgumentException(
            where + ".enabled is false but users are given: remove one of them");
      }
      return List.of();
    }
    JsonNode list = console.get("users");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw new IllegalArgumentException(
          where
              + ".users must list at least one user, like [{\"name\": \"ops\", \"hash\":"
              + " \"<relay passwd prints it>\", \"role\": \"operator\"}]: the console never runs"
              + " without sign-in");
    }
    List<User> users = new ArrayList<>();
    Set<String> names = new java.util.HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      String at = where + ".users[" + i + "]";
      JsonNode u = list.get(i);
      if (!u.isObject()) {
        throw new IllegalArgumentException(at + " must be an object with name, hash and role");
      }
      if (u.has("password")) {
        throw new IllegalArgumentException(
            at
                + ": password is not accepted (no plain-text passwords in the config); give"
                + " hash, the bcrypt hash `relay passwd` prints");
      }
      known(u, USER, at);
      String name = u.path("name").asText("").strip();
      if (name.isEmpty()) {
        throw new IllegalArgumentException(at + ": name is missing");
      }
      if (!names.add(name)) {
        throw new IllegalArgumentException(at + ": name '" + name + "' is given twice");
      }
      String hash = u.path("hash").asText("");
      if (hash.isEmpty()) {
        throw new IllegalArgumentException(
            at + ": hash is missing (`relay passwd` prints the bcrypt hash of a password)");
      }
      if (!BCRYPT.matcher(hash).matches()) {
        throw new IllegalArgumentException(
            at
                + ": hash is not a bcrypt hash (like $2a$10$ and 53 more characters); a plain-text"
                + " password is not accepted: `relay passwd` prints the hash");
      }
      String role = u.path("role").asText("");
      if (!ROLES.contains(role)) {
        throw new IllegalArgumentException(
            at + ": role must be one of " + ROLES + ", was '" + role + "'");
      }
      users.add(new User(name, hash, role));
    }
    return List.copyOf(users);
  }

  private static String bind(JsonNode node, String source) {
    String address = node.asText("").strip();
    try {
      if (address.isEmpty() || !node.isTextual()) {
        throw new UnknownHostException("empty");
      }
      InetAddress.getByName(address);
      return address;
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException(
          source + ": bind must be an IP address or host name like 127.0.0.1, was " + node);
    }
  }

  private static ScheduleConfig schedule(String name, JsonNode node, String source) {
    String where = source + " schedule " + name;
    if (!node.isObject()) {
      throw new IllegalArgumentException(where + " must be an object");
    }
    known(node, SCHEDULE, where);
    String kind = node.path("kind").asText(null);
    boolean cron = node.has("cron");
    if (cron == node.has("every")) {
      throw new IllegalArgumentException(where + ": give either cron (with zone) or every");
    }
    try {
      Schedule schedule;
      if (cron) {
        if (!node.has("zone")) {
          throw new IllegalArgumentException(
              where + ": cron needs zone, like \"Europe/Berlin\" or \"UTC\"");
        }
        schedule = Schedule.cron(node.get("cron").asText(), node.get("zone").asText());
      } else {
        schedule = Schedule.every(duration(node, "every", null, where));
      }
      String missed = node.path("missed").asText("latest").strip();
      Schedule.MissedSlots policy;
      if (missed.equals("skip")) {
        policy = Schedule.MissedSlots.skip();
      } else if (missed.equals("latest")) {
        policy = Schedule.MissedSlots.latest();
      } else if (missed.startsWith("each ")) {
        policy = Schedule.MissedSlots.each(parseDuration(missed.substring(5).strip()));
      } else {
        throw new IllegalArgumentException(
            where + ": missed must be skip, latest or each <window>, was '" + missed + "'");
      }
      schedule = schedule.missedSlots(policy);
      Scheduler.validate(name, kind, schedule);
      return new ScheduleConfig(kind, schedule);
    } catch (ScheduleException e) {
      throw new IllegalArgumentException(where + ": " + e.getMessage());
    }
  }

  private static KindConfig kind(String name, JsonNode node, String source) {
    String where = source + " kind " + name;
    if (!node.isObject()) {
      throw new IllegalArgumentException(where + " must be an object");
    }
    known(node, KIND, where);
    String handler = node.path("handler").asText("log");
    if (!HANDLERS.contains(handler)) {
      throw new IllegalArgumentException(
          where + ": handler '" + handler + "' is not one of " + HANDLERS);
    }
    KindPolicy p = KindPolicy.DEFAULT;
    if (node.has("max_attempts")) {
      p = p.withMaxAttempts(integer(node, "max_attempts", where));
    }
    p =
        p.withBackoff(
            duration(node, "backoff_base", p.backoffBase(), where),
            duration(node, "backoff_cap", p.backoffCap(), where));
    p = p.withMaxElapsed(duration(node, "max_elapsed", p.maxElapsed(), where));
    p = p.withMaxRunTime(duration(node, "max_run_time", p.maxRunTime(), where));
    p = p.withDedupHorizon(duration(node, "dedup_horizon", p.dedupHorizon(), where));
    String unknown = node.path("unknown_outcome").asText("retry");
    p =
        p.withUnknownOutcome(
            switch (unknown) {
              case "retry" -> UnknownOutcomePolicy.retry();
              case "park" -> UnknownOutcomePolicy.park();
              default ->
                  throw new IllegalArgumentException(
                      where + ": unknown_outcome must be retry or park, was '" + unknown + "'");
            });
    p = p.withLimits(limits(node, where));
    return new KindConfig(handler, p, handler.equals("http") ? route(name, node, where) : null);
  }

  /**
   * A kind's global flow limits (docs/limits.md), each optional: {@code max_running}, {@code
   * max_running_per_group} and {@code rate_limit} (1-1,000,000), {@code rate_interval} (1s-1d, set
   * exactly when {@code rate_limit} is). Checked here, so a bad value is refused naming its key
   * before anything connects.
   */
  private static FlowLimits limits(JsonNode node, String where) {
    Integer maxRunning = limit(node, "max_running", where);
    Integer perGroup = limit(node, "max_running_per_group", where);
    Integer rate = limit(node, "rate_limit", where);
    Duration interval = duration(node, "rate_interval", null, where);
    if ((rate == null) != (interval == null)) {
      throw new IllegalArgumentException(
          where
              + ": "
              + (rate == null ? "rate_interval needs rate_limit" : "rate_limit needs rate_interval")
              + " (at most rate_limit claims within any rate_interval)");
    }
    within(
        interval,
        "rate_interval",
        FlowLimits.MIN_RATE_INTERVAL,
        FlowLimits.MAX_RATE_INTERVAL,
        where);
    return new FlowLimits(maxRunning, perGroup, rate, interval);
  }

  private static Integer limit(JsonNode node, String field, String where) {
    if (!node.has(field) || node.get(field).isNull()) {
      return null;
    }
    int n = integer(node, field, where);
    if (n < 1 || n > FlowLimits.MAX_LIMIT) {
      throw new IllegalArgumentException(
          where + ": " + field + " must be between 1 and " + FlowLimits.MAX_LIMIT + ", was " + n);
    }
    return n;
  }

  /** The HTTP route of a kind whose handler is {@code http}. */
  private static HttpRoute route(String kind, JsonNode node, String where) {
    String url = node.path("url").asText(null);
    URI uri;
    try {
      uri = url == null ? null : new URI(url);
    } catch (URISyntaxException e) {
      uri = null;
    }
    if (uri == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
      throw new IllegalArgumentException(
          where + ": handler http needs \"url\" with an http or https URL, was " + url);
    }
    Duration connect = duration(node, "connect_timeout", HttpRoute.DEFAULT_CONNECT_TIMEOUT, where);
    Duration request = duration(node, "request_timeout", HttpRoute.DEFAULT_REQUEST_TIMEOUT, where);
    HttpRoute r;
    try {
      r = HttpRoute.of(kind, uri).withTimeouts(connect, request);
    } catch (InvalidConfigurationException e) {
      // The route checks its own bounds and names them as the Java API does; say the config key.
      String key =
          switch (e.setting()) {
            case "connectTimeout" -> "connect_timeout";
            case "requestTimeout" -> "request_timeout";
            default -> e.setting();
          };
      throw new IllegalArgumentException(where + ": " + key + " " + e.problem(), e);
    }
    if (node.has("receiver_ref_header")) {
      r = r.withReceiverRefHeader(node.get("receiver_ref_header").asText());
    }
    if (node.has("receiver_ref_field")) {
      r = r.withReceiverRefField(node.get("receiver_ref_field").asText());
    }
    if (node.has("milestone")) {
      String m = node.get("milestone").asText();
      try {
        r = r.withMilestone(Milestone.valueOf(m.toUpperCase(Locale.ROOT)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            where + ": milestone must be accepted, queued or delivered, was '" + m + "'");
      }
    }
    String fencing = node.path("fencing").asText("generation");
    switch (fencing) {
      case "generation" -> r = r.withFencing(HttpRoute.Fencing.GENERATION);
      case "none" -> r = r.withFencing(HttpRoute.Fencing.NONE);
      default ->
          throw new IllegalArgumentException(
              where + ": fencing must be generation or none, was '" + fencing + "'");
    }
    return r;
  }

  /** Refuses {@code value} (when set) outside {@code min..max}. */
  static void within(Duration value, String field, Duration min, Duration max, String where) {
    if (value != null && (value.compareTo(min) < 0 || value.compareTo(max) > 0)) {
      throw new IllegalArgumentException(
          where
              + ": "
              + field
              + " must be between "
              + min.toString().substring(2).toLowerCase(Locale.ROOT)
              + " and "
              + max.toString().substring(2).toLowerCase(Locale.ROOT)
              + ", was "
              + value);
    }
  }

  private static void known(JsonNode node, Set<String> fields, String where) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!fields.contains(f)) {
        throw new IllegalArgumentException(
            where + ": unknown field '" + f + "'; known fields: " + fields);
      }
    }
  }

  private static int integer(JsonNode node, String field, String where) {
    JsonNode v = node.get(field);
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw new IllegalArgumentException(where + ": " + field + " must be an integer");
    }
    return v.intValue();
  }

  private static Duration duration(JsonNode node, String field, Duration fallback, String where) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      return fallback;
    }
    try {
      return parseDuration(v.asText());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": " + field + ": " + e.getMessage());
    }
  }

  /**
   * Parses a duration as people type it: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code
   * 7d}, or ISO-8601 ({@code PT30S}), the forms the other relay commands take (Boot's simple and
   * ISO-8601 styles; negative durations refused).
   */
  static Duration parseDuration(String text) {
    try {
      Duration d = DurationStyle.detectAndParse(text == null ? "" : text.strip());
      if (!d.isNegative()) {
        return d;
      }
    } catch (IllegalArgumentException e) {
      // the message below names the accepted forms
    }
    throw new IllegalArgumentException(
        "'" + text + "' is not a duration: use 500ms, 30s, 5m, 2h, 7d or ISO-8601 like PT30S");
  }
}
