package dev.relay.spring.autoconfigure;

import dev.relay.Outbox;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * The kind names under {@code relay.kinds}, as written, against what Spring Boot's map binding
 * makes of them. A kind may hold any name {@code relay enqueue} accepts (core's rule, {@link
 * Outbox#nameProblem}: 1-{@value Outbox#MAX_NAME_LENGTH} characters from {@code A-Z a-z 0-9 . _ -
 * :}), but Boot reads a map key outside brackets leniently: it drops {@code :} ({@code mail:v2}
 * binds as {@code mailv2}), splits at {@code .} ({@code audit.note} binds as {@code audit} with a
 * setting {@code note.max-attempts}), and does not tell {@code Mail} from {@code mail} or {@code
 * a_b} from {@code ab}. Written in brackets ({@code relay.kinds.[mail:v2].max-attempts}) a key is
 * bound as it is. {@link #check} refuses, naming the property, a key Boot would bind under another
 * name (the fix: brackets) and a name core refuses, so that no kind is silently renamed.
 *
 * <p>It reads the keys of every enumerable property source as written; environment variables
 * ({@code RELAY_KINDS_...}) cannot spell these names and are left to Boot.
 */
public final class RelayKindNames {
  private static final String KINDS = "relay.kinds";

  private RelayKindNames() {}

  /**
   * Refuses a {@code relay.kinds} key that would not bind to the kind written in it.
   *
   * @throws InvalidConfigurationPropertyValueException naming the key as written and the fix
   */
  public static void check(Environment env) {
    if (!(env instanceof ConfigurableEnvironment configurable)) {
      return;
    }
    List<Key> keys = new ArrayList<>();
    for (PropertySource<?> s : configurable.getPropertySources()) {
      if (!(s instanceof EnumerablePropertySource<?> e)
          || s instanceof SystemEnvironmentPropertySource) {
        continue;
      }
      for (String name : e.getPropertyNames()) {
        Key k = Key.parse(name, e.getProperty(name));
        if (k != null) {
          keys.add(k);
        }
      }
    }
    for (Key k : keys) {
      k.check();
    }
    for (Key k : keys) {
      for (Key other : keys) {
        if (!k.bracketed && !k.kind.equals(other.kind) && sameToBoot(k.kind, other.kind)) {
          throw new InvalidConfigurationPropertyValueException(
              k.property,
              k.value,
              "Spring Boot does not tell kind '"
                  + k.kind
                  + "' from '"
                  + other.kind
                  + "' (it ignores case and _ in a key): write the kind in brackets: "
                  + k.bracketedProperty());
        }
      }
    }
  }

  /**
   * The property of a kind's setting, as it binds: {@code relay.kinds.mail.max-attempts}, or in
   * brackets when Boot would otherwise bind another name ({@code relay.kinds.[mail:v2].url}).
   */
  public static String property(String kind, String setting) {
    return KINDS + "." + key(kind) + (setting == null ? "" : "." + setting);
  }

  /** A map key as Boot binds it exactly: as it is, or in brackets. */
  public static String key(String key) {
    return boundAs(KINDS + "." + key + ".x").equals(key) ? key : "[" + key + "]";
  }

  /**
   * The key of a map under {@code relay.kinds} that Boot binds from {@code name}: its third
   * element, also when more follow ({@code relay.kinds.audit.note.max-attempts} binds kind {@code
   * audit}, the rest being read as that kind's setting {@code note.max-attempts}).
   */
  private static String boundAs(String name) {
    ConfigurationPropertyName n = ConfigurationPropertyName.adapt(name, '.');
    return n.getNumberOfElements() >= 4
        ? n.getElement(2, ConfigurationPropertyName.Form.ORIGINAL)
        : "";
  }

  private static boolean sameToBoot(String a, String b) {
    return a.replace("_", "").equalsIgnoreCase(b.replace("_", ""));
  }

  /** One key under {@code relay.kinds} as written: the kind it names, in brackets or not. */
  private record Key(String property, Object value, String kind, boolean bracketed, String rest) {
    static Key parse(String property, Object value) {
      if (!property.toLowerCase(Locale.ROOT).startsWith(KINDS)) {
        return null;
      }
      String tail = property.substring(KINDS.length());
      if (tail.startsWith(".")) {
        tail = tail.substring(1);
      } else if (!tail.startsWith("[")) {
        return null; // relay.kindsX: not a kind
      }
      if (tail.startsWith("[")) {
        int close = tail.indexOf(']');
        return close < 0
            ? null // Boot refuses the name itself
            : new Key(property, value, tail.substring(1, close), true, tail.substring(close + 1));
      }
      int dot = tail.lastIndexOf('.');
      return dot < 0
          ? new Key(property, value, tail, false, "")
          : new Key(property, value, tail.substring(0, dot), false, tail.substring(dot));
    }

    void check() {
      String problem = Outbox.nameProblem(kind);
      if (problem != null) {
        throw new InvalidConfigurationPropertyValueException(
            property, value, "is not a kind relay accepts: kind " + problem);
      }
      String bound = boundAs(property);
      if (!bracketed && !rest.isEmpty() && !bound.equals(kind)) {
        throw new InvalidConfigurationPropertyValueException(
            property,
            value,
            "Spring Boot would bind it as kind '"
                + bound
                + "', not '"
                + kind
                + "': write the kind in brackets: "
                + bracketedProperty());
      }
    }

    /** The fix: the key with the kind in brackets, and how .properties and YAML write it. */
    String bracketedProperty() {
      String fixed = KINDS + ".[" + kind + "]" + rest;
      return fixed
          + (kind.contains(":")
              ? " (in a .properties file escape the ':', " + fixed.replace(":", "\\:") + "; "
              : " (")
          + "in YAML quote the key: \"["
          + kind
          + "]\")";
    }
  }
}
