package dev.relay.serve;

import dev.relay.spring.autoconfigure.RelayKindNames;
import dev.relay.spring.autoconfigure.RelayProperties;
import dev.relay.test.JdbcUrls;
import java.beans.PropertyDescriptor;
import java.net.URI;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.PropertySource;

/**
 * {@code relay serve --print-config}: the settings serve would run with, as properties an {@code
 * application.yml} or {@code .properties} file (or the starter) takes: every {@code relay.*}
 * setting with its default filled in, {@code server.address} and {@code server.port}, and the other
 * properties the file and the command line give, as given. Secrets (a user's hash, a password, a
 * password in a JDBC URL) are masked. An unset optional setting (such as {@code
 * relay.renew-interval}, derived from the lease) is left out.
 */
final class PrintConfig {
  static final String MASK = JdbcUrls.MASK;

  private PrintConfig() {}

  /** Whether a property holds a secret that is never printed. */
  static boolean secret(String name) {
    String leaf = name.substring(name.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT);
    return leaf.equals("hash")
        || leaf.contains("password")
        || leaf.contains("secret")
        || leaf.contains("token")
        || leaf.contains("credentials");
  }

  /** The lines to print, sorted by property. */
  static List<String> lines(ServeConfig c) {
    Map<String, String> out = new TreeMap<>();
    walk("relay", c.relay(), out);
    walk("relay", c.schedules(), out);
    walk("relay.console", c.console(), out);
    for (String kind : c.kinds()) {
      String at = RelayKindNames.property(kind, null);
      if (!c.relay().getKinds().containsKey(kind)) {
        walk(at, new RelayProperties.Kind(), out);
      }
      ServeProperties.Kind k = c.serve().getKinds().getOrDefault(kind, new ServeProperties.Kind());
      if (k.getHandler() == ServeProperties.Handler.HTTP) {
        walk(at, k, out);
      } else {
        out.put(at + ".handler", "log");
      }
    }
    walk("relay.console.users", c.users(), out);
    out.put("server.address", c.bind());
    out.put("server.port", String.valueOf(c.port()));
    for (PropertySource<?> s : c.environment().getPropertySources()) {
      boolean given =
          s.getName().equals(ServeConfig.COMMAND_LINE)
              || s.getName().startsWith("relay serve config");
      if (!given || !(s instanceof EnumerablePropertySource<?>)) {
        continue;
      }
      IterableConfigurationPropertySource source =
          (IterableConfigurationPropertySource) ConfigurationPropertySource.from(s);
      for (ConfigurationPropertyName name : source) {
        String key = name.toString();
        if (!key.startsWith("relay.")) {
          ConfigurationProperty p = source.getConfigurationProperty(name);
          out.putIfAbsent(key, value(key, String.valueOf(p.getValue())));
        }
      }
    }
    return out.entrySet().stream()
        .map(e -> key(e.getKey()) + "=" + e.getValue())
        .collect(Collectors.toList());
  }

  /**
   * A key as a .properties line writes it: {@code :}, {@code =}, a space, {@code #}, {@code !} and
   * {@code \} escaped ({@code relay.kinds.[mail\:v2].handler}), as they would end the key.
   */
  static String key(String name) {
    return name.replaceAll("([\\\\:= #!])", "\\\\$1");
  }

  /** A value as printed: masked when secret, a JDBC URL's password masked. */
  static String value(String name, String text) {
    if (secret(name)) {
      return MASK;
    }
    return maskPasswords(text);
  }

  /**
   * {@code text} (a URL, or a message that may quote one) with every URL password masked: a {@code
   * password=} parameter, and the password of {@code user:password@host}. serve prints no JDBC URL,
   * in a message or a log line, without passing it through here.
   */
  static String maskPasswords(String text) {
    return JdbcUrls.maskPasswords(text);
  }

  private static void walk(String prefix, Object value, Map<String, String> out) {
    if (value == null) {
      return;
    }
    if (simple(value)) {
      out.put(prefix, value(prefix, text(value)));
      return;
    }
    if (value instanceof Collection<?> list) {
      if (list.stream().allMatch(PrintConfig::simple)) {
        if (!list.isEmpty()) {
          out.put(prefix, list.stream().map(PrintConfig::text).collect(Collectors.joining(",")));
        }
        return;
      }
      int i = 0;
      for (Object element : list) {
        walk(prefix + "[" + i++ + "]", element, out);
      }
      return;
    }
    if (value instanceof Map<?, ?> map) {
      // a key Boot would bind under another name (mail:v2, audit.note) is written in brackets
      map.forEach((k, v) -> walk(prefix + "." + RelayKindNames.key(String.valueOf(k)), v, out));
      return;
    }
    BeanWrapper bean = PropertyAccessorFactory.forBeanPropertyAccess(value);
    for (PropertyDescriptor d : bean.getPropertyDescriptors()) {
      if (d.getReadMethod() == null || d.getName().equals("class")) {
        continue;
      }
      walk(prefix + "." + kebab(d.getName()), bean.getPropertyValue(d.getName()), out);
    }
  }

  private static boolean simple(Object v) {
    return v instanceof CharSequence
        || v instanceof Number
        || v instanceof Boolean
        || v instanceof Enum<?>
        || v instanceof Duration
        || v instanceof URI;
  }

  private static String text(Object v) {
    if (v instanceof Enum<?> e) {
      return e.name().toLowerCase(Locale.ROOT);
    }
    if (v instanceof Duration d) {
      return duration(d);
    }
    return String.valueOf(v);
  }

  /**
   * A duration in the largest unit that holds it exactly: {@code 30s}, {@code 7d}, {@code 250ms}.
   */
  static String duration(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    if (d.isNegative() || !Duration.ofMillis(d.toMillis()).equals(d)) {
      return d.toString();
    }
    long ms = d.toMillis();
    long[] units = {86_400_000L, 3_600_000L, 60_000L, 1_000L};
    String[] names = {"d", "h", "m", "s"};
    for (int i = 0; i < units.length; i++) {
      if (ms % units[i] == 0) {
        return ms / units[i] + names[i];
      }
    }
    return ms + "ms";
  }

  private static String kebab(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
  }
}
