package dev.relay.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.relay.spring.autoconfigure.RelayKindNames;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.boot.origin.Origin;
import org.springframework.boot.origin.OriginTrackedValue;

/**
 * The JSON config file of {@code relay serve} before it read {@code relay.*} properties, read for
 * one more release: each key becomes the property that now holds it (the table in
 * docs/operations.md), with the key as the value's origin, so a refused value names both. Only the
 * file's shape is checked here (unknown keys, a password, what must be an object or a list); the
 * values are checked as properties, by the same code as an {@code application.yml}'s.
 */
final class JsonConfig {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static final Map<String, String> TOP =
      Map.ofEntries(
          Map.entry("queues", "relay.queues"),
          Map.entry("concurrency", "relay.concurrency"),
          Map.entry("lease", "relay.lease"),
          Map.entry("poll_interval", "relay.poll-interval"),
          Map.entry("shutdown_grace", "relay.shutdown-grace"),
          Map.entry("bind", "server.address"),
          Map.entry("port", "server.port"),
          Map.entry("http_port", "server.port"),
          Map.entry("maintenance_interval", "relay.maintenance.interval"),
          Map.entry("metrics_refresh_interval", "relay.metrics-refresh-interval"));
  private static final Map<String, String> RETENTION =
      Map.of(
          "work", "relay.maintenance.work-retention",
          "history", "relay.maintenance.history-retention",
          "identity", "relay.maintenance.identity-horizon");
  private static final Set<String> HTTP_ONLY =
      Set.of(
          "url",
          "connect_timeout",
          "request_timeout",
          "receiver_ref_header",
          "receiver_ref_field",
          "milestone",
          "fencing");
  private static final Set<String> KIND =
      union(
          HTTP_ONLY,
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
              "rate_interval"));
  private static final Set<String> SCHEDULE = Set.of("kind", "cron", "zone", "every", "missed");
  private static final Set<String> USER = Set.of("name", "hash", "role");

  /** The properties of a JSON config, and the key behind each, in the file's order. */
  record Translation(Map<String, Object> properties, Map<String, String> keys) {}

  private final String source;
  private final Map<String, Object> properties = new LinkedHashMap<>();
  private final Map<String, String> keys = new LinkedHashMap<>();

  private JsonConfig(String source) {
    this.source = source;
  }

  /** Whether {@code text} is a JSON config rather than YAML or properties: it opens an object. */
  static boolean looksLikeJson(String text) {
    String t = text.stripLeading();
    if (t.startsWith("\uFEFF")) {
      t = t.substring(1).stripLeading();
    }
    return t.startsWith("{");
  }

  /**
   * Translates {@code json} ({@code source} names it in messages).
   *
   * @throws IllegalArgumentException naming the file and the key whose shape is wrong
   */
  static Translation translate(String json, String source) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(source + " is not JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(source + " must hold one JSON object");
    }
    JsonConfig c = new JsonConfig(source);
    c.top(root);
    return new Translation(c.properties, c.keys);
  }

  private void top(JsonNode root) {
    Set<String> known = new TreeSet<>(TOP.keySet());
    known.addAll(List.of("retention", "kinds", "schedules", "console"));
    known(root, known, source);
    if (root.has("http_port") && root.has("port")) {
      throw new IllegalArgumentException(
          source + ": give port (http_port is its old name), not both");
    }
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      String key = e.getKey();
      JsonNode v = e.getValue();
      switch (key) {
        case "queues" -> {
          if (!v.isArray() || v.isEmpty()) {
            throw new IllegalArgumentException(
                source + ": queues must be a non-empty array of names");
          }
          for (int i = 0; i < v.size(); i++) {
            put("relay.queues[" + i + "]", v.get(i), "queues[" + i + "]");
          }
        }
        case "retention" -> {
          object(v, "retention");
          known(v, RETENTION.keySet(), source + " retention");
          v.properties()
              .forEach(
                  r -> put(RETENTION.get(r.getKey()), r.getValue(), "retention." + r.getKey()));
        }
        case "kinds" -> kinds(v);
        case "schedules" -> {
          object(v, "schedules");
          for (Map.Entry<String, JsonNode> s : v.properties()) {
            String where = "schedules." + s.getKey();
            object(s.getValue(), where);
            known(s.getValue(), SCHEDULE, source + " schedule " + s.getKey());
            s.getValue()
                .properties()
                .forEach(
                    f ->
                        put(
                            "relay.schedules." + s.getKey() + "." + f.getKey(),
                            f.getValue(),
                            where + "." + f.getKey()));
          }
        }
        case "console" -> console(v);
        default -> put(TOP.get(key), v, key);
      }
    }
    if (!root.has("kinds")) {
      kinds(null);
    }
  }

  private void kinds(JsonNode v) {
    if (v == null || !v.isObject() || v.isEmpty()) {
      throw new IllegalArgumentException(
          source
              + ": kinds must name at least one kind, like {\"kinds\": {\"k\": {\"handler\":"
              + " \"log\"}}}");
    }
    for (Map.Entry<String, JsonNode> k : v.properties()) {
      String where = source + " kind " + k.getKey();
      object(k.getValue(), "kinds." + k.getKey());
      known(k.getValue(), KIND, where);
      boolean http = "http".equals(k.getValue().path("handler").asText("log"));
      if (!k.getValue().has("handler")) {
        // A kind with no keys at all is still a kind: its handler is the default.
        properties.put(RelayKindNames.property(k.getKey(), "handler"), "log");
      }
      for (Map.Entry<String, JsonNode> f : k.getValue().properties()) {
        // The http keys of a log kind were never read; they stay unread.
        if (http || !HTTP_ONLY.contains(f.getKey())) {
          put(
              RelayKindNames.property(k.getKey(), kebab(f.getKey())),
              f.getValue(),
              "kinds." + k.getKey() + "." + f.getKey());
        }
      }
    }
  }

  private void console(JsonNode v) {
    String where = source + " console";
    if (!v.isObject()) {
      throw new IllegalArgumentException(where + " must be an object like {\"users\": [...]}");
    }
    known(v, Set.of("users", "enabled"), where);
    if (v.has("enabled")) {
      put("relay.console.enabled", v.get("enabled"), "console.enabled");
    }
    if (!v.has("users")) {
      return;
    }
    JsonNode list = v.get("users");
    if (!list.isArray()) {
      throw new IllegalArgumentException(where + ".users must be a list of users");
    }
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
      for (Map.Entry<String, JsonNode> f : u.properties()) {
        put(
            "relay.console.users[" + i + "]." + f.getKey(),
            f.getValue(),
            "console.users[" + i + "]." + f.getKey());
      }
    }
  }

  /** Puts the value of {@code key} as {@code property}; a null value is as if not given. */
  private void put(String property, JsonNode value, String key) {
    if (value.isNull()) {
      return;
    }
    if (value.isContainerNode()) {
      throw new IllegalArgumentException(
          source + ": " + key + " must be a single value, was " + value);
    }
    properties.put(property, OriginTrackedValue.of(value.asText(), new JsonOrigin(source, key)));
    keys.put(property, key);
  }

  private void object(JsonNode v, String key) {
    if (!v.isObject()) {
      throw new IllegalArgumentException(source + ": " + key + " must be an object");
    }
  }

  private static void known(JsonNode node, Set<String> fields, String where) {
    for (String f : (Iterable<String>) node::fieldNames) {
      if (!fields.contains(f)) {
        throw new IllegalArgumentException(
            where + ": unknown field '" + f + "'; known fields: " + new TreeSet<>(fields));
      }
    }
  }

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> all = new TreeSet<>(a);
    all.addAll(b);
    return Set.copyOf(all);
  }

  static String kebab(String snake) {
    return snake.replace('_', '-').toLowerCase(Locale.ROOT);
  }

  /** Where a translated value came from: the file and the JSON key. */
  record JsonOrigin(String file, String key) implements Origin {
    @Override
    public String toString() {
      return key + " in " + file;
    }
  }

  /** The keys used, for the warning: {@code key is now property}. */
  static List<String> equivalents(Translation t) {
    List<String> lines = new ArrayList<>();
    t.keys().forEach((property, key) -> lines.add(key + " is now " + property));
    return lines;
  }
}
