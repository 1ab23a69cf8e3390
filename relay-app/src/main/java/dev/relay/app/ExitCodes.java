package dev.relay.app;

import java.util.LinkedHashMap;
import java.util.Map;

/** The exit codes of every {@code relay} command, as documented in each command's help. */
final class ExitCodes {
  /** Done. */
  static final int OK = 0;

  /** Refused (a conflict, a redrive outside the rules, an unmigrated schema) or not found. */
  static final int REFUSED = 1;

  /** Usage error: unknown or missing options, bad values, invalid input such as a bad work ID. */
  static final int USAGE = 2;

  /** The database cannot be reached or started. */
  static final int UNAVAILABLE = 3;

  private ExitCodes() {}

  /** The list shown under "Exit codes:" in every help page. */
  static Map<String, String> help() {
    Map<String, String> codes = new LinkedHashMap<>();
    codes.put(" 0", "ok");
    codes.put(" 1", "refused or not found (a conflict, a refused redrive, an unmigrated schema)");
    codes.put(" 2", "usage error (unknown or missing options, bad values, invalid work or config)");
    codes.put(
        " 3", "database unavailable (one line on stderr; the stack trace only with --verbose)");
    return codes;
  }
}
