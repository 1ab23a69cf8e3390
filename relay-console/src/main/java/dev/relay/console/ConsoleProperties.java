package dev.relay.console;

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
 * relay.console.refresh=5s                  # live parts of pages refresh this often; 0: off
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

  /** How far back the overview counts failures and completions. Default 1 hour. */
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

  /** The path, checked; the page size, checked. */
  String mount() {
    check();
    return path;
  }

  /**
   * Checks the path, page size and refresh, naming the property and its value.
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
    if (refresh == null
        || refresh.isNegative()
        || (!refresh.isZero() && refresh.compareTo(Duration.ofSeconds(1)) < 0)) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.refresh", refresh, "must be 0 (off) or at least 1s");
    }
  }
}
