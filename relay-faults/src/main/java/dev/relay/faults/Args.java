package dev.relay.faults;

import java.util.LinkedHashMap;
import java.util.Map;

/** Parses {@code --name value} pairs. */
final class Args {
  private Args() {}

  static Map<String, String> parse(String[] args) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("expected --option, got '" + a + "'");
      }
      int eq = a.indexOf('=');
      if (eq > 0) {
        out.put(a.substring(2, eq), a.substring(eq + 1));
      } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
        out.put(a.substring(2), args[++i]);
      } else {
        out.put(a.substring(2), "true");
      }
    }
    return out;
  }
}
