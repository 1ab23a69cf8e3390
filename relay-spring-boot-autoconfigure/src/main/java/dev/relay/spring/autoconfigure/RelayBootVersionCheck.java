package dev.relay.spring.autoconfigure;

import java.util.function.Supplier;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;

/**
 * Stops an application on Spring Boot older than 4.0 before anything else goes wrong, with one
 * message that names the cause. The starter is built for Boot 4 and brings Boot 4's modules (such
 * as {@code spring-boot-jackson}); next to Boot 3.5 they fail later with errors that point
 * elsewhere (Boot's "The bean 'jsonComponentModule' ... could not be registered ... Consider ...
 * allow-bean-definition-overriding"). This listener runs when the environment is prepared, before
 * any bean definition is read, and refuses with {@link UnsupportedBootException}, which {@link
 * Analyzer} turns into Boot's "APPLICATION FAILED TO START" report.
 *
 * <p>Both are registered in {@code META-INF/spring.factories}, which Boot 3 and Boot 4 read alike,
 * and use only API present in both ({@link SpringBootVersion}, {@link
 * ApplicationEnvironmentPreparedEvent}, {@link AbstractFailureAnalyzer}). A Boot whose version
 * cannot be read (classes repackaged without their constant) is let through: the check refuses only
 * what it knows to be too old.
 */
public final class RelayBootVersionCheck
    implements ApplicationListener<ApplicationEnvironmentPreparedEvent>, Ordered {
  /** The oldest Spring Boot major version the starter runs on. */
  static final int MIN_MAJOR = 4;

  private final Supplier<String> version;

  /** The check against the Spring Boot on the class path; Boot creates it from spring.factories. */
  public RelayBootVersionCheck() {
    this(SpringBootVersion::getVersion);
  }

  RelayBootVersionCheck(Supplier<String> version) {
    this.version = version;
  }

  @Override
  public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
    String problem = problem(version.get());
    if (problem != null) {
      throw new UnsupportedBootException(problem);
    }
  }

  /** Before Boot's own environment post-processors and every other listener of this event. */
  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  /**
   * Why the starter cannot run on Spring Boot {@code version}, or null when it can (or when the
   * version is unknown).
   */
  static String problem(String version) {
    if (version == null || version.isBlank()) {
      return null;
    }
    int end = 0;
    while (end < version.length() && Character.isDigit(version.charAt(end))) {
      end++;
    }
    if (end == 0 || end > 9) {
      return null;
    }
    int major = Integer.parseInt(version.substring(0, end));
    if (major >= MIN_MAJOR) {
      return null;
    }
    return "Relay's starter needs Spring Boot 4.0 or later; this application runs Spring Boot "
        + version
        + ". Upgrade the application to Spring Boot 4, or leave out relay-spring-boot-starter"
        + " and use Relay's plain-Java API (relay-core, with relay-jackson for typed messages)."
        + " The starter brings Boot 4 modules, which fail next to Boot "
        + version
        + " with errors that point elsewhere";
  }

  /** The refusal; its message says what to do. */
  static final class UnsupportedBootException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    UnsupportedBootException(String message) {
      super(message);
    }
  }

  /** Boot's failure report for the refusal: the message as description, the fix as action. */
  static final class Analyzer extends AbstractFailureAnalyzer<UnsupportedBootException> {
    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, UnsupportedBootException cause) {
      return new FailureAnalysis(
          cause.getMessage(),
          "Upgrade to Spring Boot 4.0 or later (see Relay's docs/spring.md, \"Supported\"), or"
              + " remove relay-spring-boot-starter and use relay-core directly.",
          cause);
    }
  }
}
