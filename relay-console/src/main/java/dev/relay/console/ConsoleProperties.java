package dev.relay.console;

import dev.relay.admin.Admin;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * The console's {@code relay.console.*} properties.
 *
 * <pre>
 * relay.console.path=/relay                 # where it is mounted
 * relay.console.viewer-role=RELAY_VIEWER    # may read every page
 * relay.console.operator-role=RELAY_OPERATOR # may also redrive, cancel, supersede, purge dry-run
 * relay.console.loopback-read-only=false    # true: without Spring Security, a read-only console
 *                                           # answering loopback clients only
 * relay.console.health-window=1h            # the overview counts failures over this (1s-365d)
 * relay.console.refresh=5s                  # live parts of pages refresh this often; 0: off
 * relay.console.sign-in.max-failures-per-user=5     # failed sign-ins per user name ...
 * relay.console.sign-in.max-failures-per-address=20 # ... and per client address ...
 * relay.console.sign-in.window=15m                  # ... in any window this long
 * relay.console.sign-in.tracked=10000               # user names (and addresses) counted at most
 * relay.console.session.idle-timeout=30m    # signed out after this long without a request
 * relay.console.session.max-lifetime=12h    # signed out this long after signing in, whatever
 * </pre>
 */
@ConfigurationProperties("relay.console")
public class ConsoleProperties {
  private boolean enabled = true;
  private String path = "/relay";
  private String viewerRole = "RELAY_VIEWER";
  private String operatorRole = "RELAY_OPERATOR";
  private boolean loopbackReadOnly = false;
  private int pageSize = 50;
  private Duration healthWindow = Duration.ofHours(1);
  private Duration refresh = Duration.ofSeconds(5);
  private final SignIn signIn = new SignIn();
  private final Session session = new Session();

  /**
   * The limits on failed sign-ins ({@code relay.console.sign-in.*}): after {@code
   * max-failures-per-user} failures for one user name, or {@code max-failures-per-address} from one
   * client address, within any {@code window}, further sign-ins for that name or from that address
   * are refused with 429 until the oldest of those failures leaves the window, even with the right
   * password.
   */
  public static class SignIn {
    private int maxFailuresPerUser = 5;
    private int maxFailuresPerAddress = 20;
    private Duration window = Duration.ofMinutes(15);
    private int tracked = 10_000;

    /** Failed sign-ins for one user name within the window before it is refused (1-1000). */
    public int getMaxFailuresPerUser() {
      return maxFailuresPerUser;
    }

    /** Sets {@link #getMaxFailuresPerUser()}. Default 5. */
    public void setMaxFailuresPerUser(int maxFailuresPerUser) {
      this.maxFailuresPerUser = maxFailuresPerUser;
    }

    /** Failed sign-ins from one client address within the window before it is refused (1-1000). */
    public int getMaxFailuresPerAddress() {
      return maxFailuresPerAddress;
    }

    /** Sets {@link #getMaxFailuresPerAddress()}. Default 20. */
    public void setMaxFailuresPerAddress(int maxFailuresPerAddress) {
      this.maxFailuresPerAddress = maxFailuresPerAddress;
    }

    /** How long a failure counts (1 s to 1 day). Default 15 minutes. */
    public Duration getWindow() {
      return window;
    }

    /** Sets {@link #getWindow()}. */
    public void setWindow(Duration window) {
      this.window = window;
    }

    /**
     * How many user names, and how many addresses, are counted at most (100-1,000,000); past that
     * the one whose latest failure is oldest is let go. Default 10,000.
     */
    public int getTracked() {
      return tracked;
    }

    /** Sets {@link #getTracked()}. */
    public void setTracked(int tracked) {
      this.tracked = tracked;
    }
  }

  /**
   * How long a console session lasts ({@code relay.console.session.*}): it ends after {@code
   * idle-timeout} without a request of the user's (the pages' own live refresh does not count) and
   * {@code max-lifetime} after signing in, whatever happened since.
   */
  public static class Session {
    private Duration idleTimeout = Duration.ofMinutes(30);
    private Duration maxLifetime = Duration.ofHours(12);

    /** The longest a session may go without a request of the user's (1 s to 7 days). */
    public Duration getIdleTimeout() {
      return idleTimeout;
    }

    /** Sets {@link #getIdleTimeout()}. Default 30 minutes. */
    public void setIdleTimeout(Duration idleTimeout) {
      this.idleTimeout = idleTimeout;
    }

    /** The longest a session lasts after signing in (1 s to 30 days). Default 12 hours. */
    public Duration getMaxLifetime() {
      return maxLifetime;
    }

    /** Sets {@link #getMaxLifetime()}. */
    public void setMaxLifetime(Duration maxLifetime) {
      this.maxLifetime = maxLifetime;
    }
  }

  /** Whether the console is mounted at all (still only behind Spring Security). Default true. */
  public boolean isEnabled() {
    return enabled;
  }

  /** Sets {@link #isEnabled()}. */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /** The path the console is mounted under, starting with {@code /}. Default {@code /relay}. */
  public String getPath() {
    return path;
  }

  /** Sets {@link #getPath()}. */
  public void setPath(String path) {
    this.path = path;
  }

  /** The role (without {@code ROLE_}) that may read the console. Default {@code RELAY_VIEWER}. */
  public String getViewerRole() {
    return viewerRole;
  }

  /** Sets {@link #getViewerRole()}. */
  public void setViewerRole(String viewerRole) {
    this.viewerRole = viewerRole;
  }

  /**
   * The role (without {@code ROLE_}) that may read and act: redrive, cancel, supersede, purge dry
   * run. Default {@code RELAY_OPERATOR}.
   */
  public String getOperatorRole() {
    return operatorRole;
  }

  /** Sets {@link #getOperatorRole()}. */
  public void setOperatorRole(String operatorRole) {
    this.operatorRole = operatorRole;
  }

  /**
   * Without Spring Security: mount a read-only console that answers only requests from a loopback
   * address (no actions, no login). Default false, so without Spring Security nothing is mounted.
   */
  public boolean isLoopbackReadOnly() {
    return loopbackReadOnly;
  }

  /** Sets {@link #isLoopbackReadOnly()}. */
  public void setLoopbackReadOnly(boolean loopbackReadOnly) {
    this.loopbackReadOnly = loopbackReadOnly;
  }

  /** Items per work-list page (1-1000). Default 50. */
  public int getPageSize() {
    return pageSize;
  }

  /** Sets {@link #getPageSize()}. */
  public void setPageSize(int pageSize) {
    this.pageSize = pageSize;
  }

  /**
   * How far back the overview counts failures and completions, within core's bounds for {@link
   * Admin#health} ({@link Admin#MIN_HEALTH_WINDOW} to {@link Admin#MAX_HEALTH_WINDOW}). Default 1
   * hour.
   */
  public Duration getHealthWindow() {
    return healthWindow;
  }

  /** Sets {@link #getHealthWindow()}. */
  public void setHealthWindow(Duration healthWindow) {
    this.healthWindow = healthWindow;
  }

  /**
   * How often the overview, the work list and the item page refresh their live parts in the browser
   * (the console's own script fetches the page again and swaps those parts in); zero turns it off.
   * Default 5 seconds; at least 1 second.
   */
  public Duration getRefresh() {
    return refresh;
  }

  /** Sets {@link #getRefresh()}. */
  public void setRefresh(Duration refresh) {
    this.refresh = refresh;
  }

  /** The limits on failed sign-ins. */
  public SignIn getSignIn() {
    return signIn;
  }

  /** How long a console session lasts. */
  public Session getSession() {
    return session;
  }

  /** The path, checked; the page size, checked. */
  String mount() {
    check();
    return path;
  }

  /**
   * Checks the path, page size, health window, refresh, sign-in limits and session lifetimes,
   * naming the property, its value and the allowed range.
   *
   * @throws InvalidConfigurationPropertyValueException for the first bad one
   */
  public void check() {
    String p = path == null ? "" : path;
    if (!p.matches("/[A-Za-z0-9._~/-]*") || p.contains("//")) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.path", path, "must start with / and hold only letters, digits and ._~-/");
    }
    if (p.endsWith("/")) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.path", path, "must not end with / (and must not be / itself)");
    }
    if (pageSize < 1 || pageSize > 1000) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.page-size", pageSize, "must be between 1 and 1000");
    }
    range("health-window", healthWindow, Admin.MIN_HEALTH_WINDOW, Admin.MAX_HEALTH_WINDOW);
    if (refresh == null
        || refresh.isNegative()
        || (!refresh.isZero() && refresh.compareTo(Duration.ofSeconds(1)) < 0)) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.refresh", refresh, "must be 0 (off) or at least 1s");
    }
    range("sign-in.max-failures-per-user", signIn.maxFailuresPerUser, 1, 1000);
    range("sign-in.max-failures-per-address", signIn.maxFailuresPerAddress, 1, 1000);
    range("sign-in.tracked", signIn.tracked, 100, 1_000_000);
    range("sign-in.window", signIn.window, Duration.ofSeconds(1), Duration.ofDays(1));
    range("session.idle-timeout", session.idleTimeout, Duration.ofSeconds(1), Duration.ofDays(7));
    range("session.max-lifetime", session.maxLifetime, Duration.ofSeconds(1), Duration.ofDays(30));
  }

  private static void range(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console." + name, value, "must be between " + min + " and " + max);
    }
  }

  private static void range(String name, Duration value, Duration min, Duration max) {
    if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console." + name,
          value,
          "must be between " + asProperty(min) + " and " + asProperty(max));
    }
  }

  /** {@code d} as a property value takes it, in the largest unit that holds it exactly: 7d, 1s. */
  private static String asProperty(Duration d) {
    long ms = d.toMillis();
    long[] units = {86_400_000, 3_600_000, 60_000, 1_000};
    String[] names = {"d", "h", "m", "s"};
    for (int i = 0; i < units.length; i++) {
      if (ms % units[i] == 0) {
        return ms / units[i] + names[i];
      }
    }
    return ms + "ms";
  }
}
