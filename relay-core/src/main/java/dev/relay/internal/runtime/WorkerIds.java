package dev.relay.internal.runtime;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Locale;

/** Default worker IDs: {@code host-pid-random}, unique per runtime even within one process. */
public final class WorkerIds {
  private static final SecureRandom RANDOM = new SecureRandom();

  /** The longest worker ID: the {@code claimed_by} column's bound, with room to spare. */
  public static final int MAX_LENGTH = 200;

  private WorkerIds() {}

  /**
   * Why {@code id} cannot be a worker ID ("must be 1-200 characters, ..."), or {@code null} when it
   * can: the rule of {@code Relay.Builder.workerId} and of {@code ManualClaims}.
   */
  public static String problem(String id) {
    if (id != null && !id.isBlank() && id.length() <= MAX_LENGTH && id.indexOf('\u0000') < 0) {
      return null;
    }
    if (id != null && id.indexOf('\u0000') >= 0) {
      return "must not contain a NUL character (\\u0000)";
    }
    return "must be 1-"
        + MAX_LENGTH
        + " characters, not blank, was "
        + (id == null ? "null" : "'" + id + "'");
  }

  /** A new worker ID such as {@code web-3-41234-9f2c1a}. */
  public static String generate() {
    byte[] suffix = new byte[3];
    RANDOM.nextBytes(suffix);
    String host = host().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9.\\-]", "-");
    if (host.length() > 100) {
      host = host.substring(0, 100);
    }
    return host + "-" + ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(suffix);
  }

  private static String host() {
    String env = System.getenv("HOSTNAME");
    if (env != null && !env.isBlank()) {
      return env;
    }
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "unknown-host";
    }
  }
}
