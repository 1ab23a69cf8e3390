package dev.relay.transport.http;

import dev.relay.InvalidConfigurationException;
import dev.relay.Milestone;
import java.net.URI;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;

/**
 * Reads {@link HttpRoute}s from properties, the form the {@code serve} command's configuration file
 * uses:
 *
 * <pre>
 * http.order_received.url = http://127.0.0.1:8081/mail
 * http.order_received.connect-timeout = PT2S          # ISO-8601 durations
 * http.order_received.request-timeout = PT10S
 * http.order_received.receiver-ref-field = email_id   # or receiver-ref-header = X-Message-Id
 * http.order_received.milestone = queued              # accepted | queued | delivered
 * http.order_received.fencing = generation            # generation | resource | none
 * </pre>
 *
 * Unknown keys under {@code http.} are refused, so a typo does not pass silently.
 */
public final class HttpRoutes {
  private static final String PREFIX = "http.";
  private static final List<String> KEYS =
      List.of(
          "url",
          "connect-timeout",
          "request-timeout",
          "receiver-ref-header",
          "receiver-ref-field",
          "milestone",
          "fencing");

  private HttpRoutes() {}

  /**
   * The routes named in {@code p}, one per kind, in kind order.
   *
   * @param p the properties
   * @return the routes
   * @throws InvalidConfigurationException naming the key of the first invalid setting
   */
  public static List<HttpRoute> fromProperties(Properties p) {
    TreeSet<String> kinds = new TreeSet<>();
    for (String key : p.stringPropertyNames()) {
      if (!key.startsWith(PREFIX)) {
        continue;
      }
      String rest = key.substring(PREFIX.length());
      int dot = rest.lastIndexOf('.');
      if (dot < 1 || !KEYS.contains(rest.substring(dot + 1))) {
        throw new InvalidConfigurationException(key, "is not a known setting; use " + KEYS);
      }
      kinds.add(rest.substring(0, dot));
    }
    List<HttpRoute> routes = new ArrayList<>();
    for (String kind : kinds) {
      String base = PREFIX + kind + ".";
      String url = p.getProperty(base + "url");
      if (url == null) {
        throw new InvalidConfigurationException(base + "url", "is missing");
      }
      HttpRoute r;
      try {
        r = HttpRoute.of(kind, URI.create(url.strip()));
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationException(base + "url", e.getMessage());
      }
      r =
          r.withTimeouts(
              duration(p, base + "connect-timeout", r.connectTimeout()),
              duration(p, base + "request-timeout", r.requestTimeout()));
      r = r.withReceiverRefHeader(p.getProperty(base + "receiver-ref-header"));
      r = r.withReceiverRefField(p.getProperty(base + "receiver-ref-field"));
      String m = p.getProperty(base + "milestone");
      if (m != null) {
        r = r.withMilestone(enumValue(Milestone.class, base + "milestone", m));
      }
      String f = p.getProperty(base + "fencing");
      if (f != null) {
        r = r.withFencing(enumValue(HttpRoute.Fencing.class, base + "fencing", f));
      }
      routes.add(r);
    }
    return routes;
  }

  private static Duration duration(Properties p, String key, Duration dflt) {
    String v = p.getProperty(key);
    if (v == null) {
      return dflt;
    }
    try {
      return Duration.parse(v.strip());
    } catch (DateTimeParseException e) {
      throw new InvalidConfigurationException(key, "is not an ISO-8601 duration like PT2S: " + v);
    }
  }

  private static <E extends Enum<E>> E enumValue(Class<E> type, String key, String v) {
    try {
      return Enum.valueOf(type, v.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new InvalidConfigurationException(
          key, "must be one of " + java.util.Arrays.toString(type.getEnumConstants()) + ": " + v);
    }
  }
}
