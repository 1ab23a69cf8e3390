package dev.relay.spring.autoconfigure;

import dev.relay.FlowLimits;
import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.UnknownOutcomePolicy;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.PurgePolicy;
import java.time.Duration;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.Environment;

/** Applies {@link RelayProperties} to a builder and names the property behind a refused setting. */
final class RelaySettings {
  static final String PHASE_TIMEOUT = "spring.lifecycle.timeout-per-shutdown-phase";

  /** Spring's default time per shutdown phase. */
  static final Duration DEFAULT_PHASE_TIMEOUT = Duration.ofSeconds(30);

  /** What {@code Relay.close()} may take beyond the grace period. */
  static final Duration CLOSE_OVERHEAD = Duration.ofSeconds(2);

  /** The longest {@code relay.health-details-max-age}. */
  static final Duration MAX_HEALTH_DETAILS_AGE = Duration.ofHours(1);

  private static final Pattern KIND_SETTING = Pattern.compile("kind (.+): (\\w+)");

  private RelaySettings() {}

  static Relay.Builder apply(Relay.Builder b, RelayProperties p, Duration grace) {
    b.schema(p.getSchema())
        .queues(p.getQueues().toArray(String[]::new))
        .batchSize(p.getBatchSize())
        .concurrency(p.getConcurrency())
        .bufferSize(p.getBufferSize())
        .lease(p.getLease())
        .pollInterval(p.getPollInterval())
        .pollJitter(p.getPollJitter())
        .notifications(p.isNotifications())
        .localHandoff(p.isLocalHandoff())
        .shutdownGrace(grace)
        .completionBatchSize(p.getCompletionBatchSize())
        .completionMaxDelay(p.getCompletionMaxDelay())
        .statementTimeout(p.getStatementTimeout())
        .lockTimeout(p.getLockTimeout())
        .idleInTransactionTimeout(p.getIdleInTransactionTimeout());
    if (p.getWorkerId() != null) {
      b.workerId(p.getWorkerId());
    }
    if (p.getRenewInterval() != null) {
      b.renewInterval(p.getRenewInterval());
    }
    if (p.getStartMargin() != null) {
      b.startMargin(p.getStartMargin());
    }
    return b;
  }

  static KindPolicy policy(RelayProperties.Kind k) {
    if (k == null) {
      return KindPolicy.DEFAULT;
    }
    return KindPolicy.DEFAULT
        .withBackoff(k.getBackoffBase(), k.getBackoffCap())
        .withMaxAttempts(k.getMaxAttempts())
        .withMaxElapsed(k.getMaxElapsed())
        .withMaxRunTime(k.getMaxRunTime())
        .withDedupHorizon(k.getDedupHorizon())
        .withUnknownOutcome(
            k.getUnknownOutcome() == RelayProperties.UnknownOutcome.PARK
                ? UnknownOutcomePolicy.park()
                : UnknownOutcomePolicy.retry())
        // ranges (and a rate-interval without rate-limit) are checked by Relay.Builder.build()
        .withLimits(
            new FlowLimits(
                k.getMaxRunning(),
                k.getMaxRunningPerGroup(),
                k.getRateLimit(),
                k.getRateInterval()));
  }

  /**
   * The shutdown grace: the configured one, which with {@link #CLOSE_OVERHEAD} must fit in the
   * shutdown phase, or by default Relay's 30 s shortened to fit.
   */
  static Duration grace(RelayProperties p, Environment env) {
    Duration phase =
        Binder.get(env).bind(PHASE_TIMEOUT, Duration.class).orElse(DEFAULT_PHASE_TIMEOUT);
    Duration fits = phase.minus(CLOSE_OVERHEAD);
    if (p.getShutdownGrace() == null) {
      Duration d =
          Relay.DEFAULT_SHUTDOWN_GRACE.compareTo(fits) < 0 ? Relay.DEFAULT_SHUTDOWN_GRACE : fits;
      return d.isNegative() ? Duration.ZERO : d;
    }
    if (p.getShutdownGrace().compareTo(fits) > 0) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.shutdown-grace",
          p.getShutdownGrace(),
          "must be at most "
              + PHASE_TIMEOUT
              + " ("
              + phase
              + ") minus "
              + CLOSE_OVERHEAD
              + ", so that Relay stops within Spring's shutdown phase");
    }
    return p.getShutdownGrace();
  }

  /**
   * The direct connection's URL must be a PostgreSQL JDBC URL (pgjdbc would otherwise fail only at
   * the first LISTEN, in the background); a user or password without it would be ignored.
   */
  static void requireDirectConnection(RelayProperties.DirectConnection d) {
    String url = d.getUrl();
    if (url != null && !url.startsWith("jdbc:postgresql:")) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.direct-connection.url",
          url,
          "must be a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database) of the server"
              + " itself, not of a pooler");
    }
    boolean noUrl = url == null || url.isBlank();
    if (noUrl && d.getUsername() != null) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.direct-connection.username",
          d.getUsername(),
          "is set without relay.direct-connection.url, which it belongs to");
    }
    if (noUrl && d.getPassword() != null) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.direct-connection.password",
          "(hidden)",
          "is set without relay.direct-connection.url, which it belongs to");
    }
  }

  /**
   * The maintenance loop's configuration from {@code relay.schema} and {@code relay.maintenance.*},
   * whose ranges (core's, {@link PurgePolicy} and {@link MaintenanceConfig}) are checked here first
   * so that a refusal reads in the property's own terms ({@code must be between 1m and 36500d, was
   * 1s}) rather than in core's Java names and ISO durations.
   */
  static MaintenanceConfig maintenance(RelayProperties p) {
    RelayProperties.Maintenance m = p.getMaintenance();
    String at = "relay.maintenance.";
    requireRange(
        at + "interval", m.getInterval(), Duration.ofSeconds(1), Duration.ofHours(24), "24h");
    Duration min = PurgePolicy.MIN_RETENTION;
    Duration max = PurgePolicy.MAX_RETENTION;
    requireRange(at + "work-retention", m.getWorkRetention(), min, max, duration(max));
    requireRange(at + "history-retention", m.getHistoryRetention(), min, max, duration(max));
    requireRange(at + "identity-horizon", m.getIdentityHorizon(), min, max, duration(max));
    requireRange(at + "batch-size", m.getBatchSize(), PurgePolicy.MAX_BATCH_SIZE);
    requireRange(at + "max-batches", m.getMaxBatches(), PurgePolicy.MAX_BATCHES);
    return new MaintenanceConfig(
        p.getSchema(),
        m.getInterval(),
        new PurgePolicy(
            m.getWorkRetention(),
            m.getHistoryRetention(),
            m.getIdentityHorizon(),
            m.getBatchSize(),
            m.getMaxBatches()));
  }

  /** Refuses {@code value} outside {@code min}-{@code max}; {@code shown} is max as documented. */
  private static void requireRange(
      String property, Duration value, Duration min, Duration max, String shown) {
    if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      String was = value == null ? "unset" : duration(value);
      throw new InvalidConfigurationPropertyValueException(
          property, was, "must be between " + duration(min) + " and " + shown + ", was " + was);
    }
  }

  private static void requireRange(String property, int value, int max) {
    if (value < 1 || value > max) {
      throw new InvalidConfigurationPropertyValueException(
          property, value, "must be between 1 and " + max + ", was " + value);
    }
  }

  /**
   * A duration as a Spring property is written: in its largest whole unit of {@code d}, {@code h},
   * {@code m}, {@code s} and {@code ms} ({@code 36500d}, {@code 90s}, {@code 1500ms}).
   */
  static String duration(Duration d) {
    if (d.isNegative()) {
      return "-" + duration(d.negated());
    }
    long seconds = d.getSeconds();
    int nanos = d.getNano();
    if (nanos % 1_000_000 != 0) {
      return d.toString(); // finer than a millisecond: no property is written so
    }
    if (nanos != 0) {
      return (seconds * 1000 + nanos / 1_000_000) + "ms";
    }
    long[] sizes = {86_400, 3_600, 60};
    String[] units = {"d", "h", "m"};
    for (int i = 0; seconds != 0 && i < sizes.length; i++) {
      if (seconds % sizes[i] == 0) {
        return seconds / sizes[i] + units[i];
      }
    }
    return seconds + "s";
  }

  static void requirePoolSize(RelayProperties p) {
    if (p.getPoolSize() < 1 || p.getPoolSize() > 100) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.pool-size", p.getPoolSize(), "must be between 1 and 100");
    }
  }

  /**
   * The same problem, named by the {@code relay.*} property that holds the setting, or by the
   * {@code @RelayHandler} whose kind is invalid.
   */
  static RuntimeException translate(InvalidConfigurationException e, Environment env) {
    String setting = e.setting();
    if (setting.startsWith("handle(")) {
      return new IllegalStateException("@RelayHandler: " + e.getMessage(), e);
    }
    Matcher kind = KIND_SETTING.matcher(setting);
    return kind.matches()
        ? refused(RelayKindNames.property(kind.group(1), kebab(kind.group(2))), e, env)
        : refused("relay." + kebab(setting), e, env);
  }

  /**
   * Runs {@code build}, naming a refused setting by its property under {@code prefix} (such as
   * {@code relay.maintenance.}); a setting named {@code policy.workRetention} is {@code
   * work-retention} there.
   */
  static <T> T named(String prefix, Environment env, Supplier<T> build) {
    try {
      return build.get();
    } catch (InvalidConfigurationException e) {
      String setting = e.setting();
      String leaf = setting.substring(setting.lastIndexOf('.') + 1);
      throw refused(prefix + kebab(leaf), e, env);
    }
  }

  /**
   * Boot's exception for a bad property value, which its failure analyzer reports naming the
   * property and where its value came from, with Relay's refusal as the reason. It carries no
   * cause: its constructor sets none, and one cannot be added afterwards ({@code initCause}
   * throws).
   */
  private static InvalidConfigurationPropertyValueException refused(
      String property, InvalidConfigurationException e, Environment env) {
    String value = env.getProperty(property);
    return new InvalidConfigurationPropertyValueException(
        property, value == null ? "(default)" : value, e.problem());
  }

  /**
   * The settings read outside the runtime's builder, checked before the runtime's pool opens: the
   * pool size, the schema, the payload limit and the health check's timings.
   */
  static void check(RelayProperties p, Environment env) {
    RelayKindNames.check(env);
    requirePoolSize(p);
    requireDirectConnection(p.getDirectConnection());
    named(
        "relay.",
        env,
        () ->
            Outbox.builder().schema(p.getSchema()).maxPayloadBytes(p.getMaxPayloadBytes()).build());
    Duration age = p.getHealthDetailsMaxAge();
    if (age == null || age.isNegative() || age.compareTo(MAX_HEALTH_DETAILS_AGE) > 0) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.health-details-max-age", age, "must be between 0s and " + MAX_HEALTH_DETAILS_AGE);
    }
    Duration timeout = p.getHealthTimeout();
    if (timeout == null
        || timeout.compareTo(Duration.ofMillis(100)) < 0
        || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.health-timeout", timeout, "must be between 100ms and 1m");
    }
  }

  static String kebab(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
  }
}
