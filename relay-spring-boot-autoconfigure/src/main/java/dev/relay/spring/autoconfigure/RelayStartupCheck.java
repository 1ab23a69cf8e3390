package dev.relay.spring.autoconfigure;

import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.admin.Admin;
import dev.relay.admin.Maintenance;
import dev.relay.micrometer.RelayMetrics;
import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Checks the {@code relay.*} properties of an environment as the auto-configuration does when the
 * context starts, without starting or connecting anything: the values bind, the runtime's builder
 * accepts them with a handler for each kind, and the maintenance loop, the gauges' refresh and the
 * schedules (when relay-micrometer and relay-schedule are present) accept theirs. A launcher runs
 * it before it opens a database or a port, so that a bad value changes nothing; {@code relay serve}
 * does. It does not look at the database: the schema's version, the credentials and the handlers'
 * own settings are checked when the context starts.
 */
public final class RelayStartupCheck {
  /** The kind the runtime's builder is given when there is none, as it needs one. */
  private static final String STAND_IN_KIND = "relay_settings_check";

  /**
   * The stand-in's policy: valid, and with the longest deduplication horizon, so that it never
   * outlasts {@code relay.lease} plus {@code relay.poll-interval}. Whether a kind's horizon does is
   * that kind's problem, reported under its own name when the runtime is built with its handler;
   * without any kind nothing is taken over and the question does not arise.
   */
  private static final KindPolicy STAND_IN_POLICY =
      KindPolicy.DEFAULT.withDedupHorizon(Duration.ofDays(3650));

  private RelayStartupCheck() {}

  /**
   * Checks {@code env}.
   *
   * @param kinds the kinds the context will handle; each {@code relay.kinds.<kind>} must be one
   * @return the bound properties
   * @throws org.springframework.boot.context.properties.bind.BindException when a value does not
   *     bind (its property and origin are in the exception)
   * @throws InvalidConfigurationPropertyValueException when a value is refused, naming the
   *     property, its value and why
   */
  public static RelayProperties check(Environment env, Collection<String> kinds) {
    RelayProperties p = Binder.get(env).bindOrCreate("relay", RelayProperties.class);
    checkBound(p, env, kinds);
    for (String kind : p.getKinds().keySet()) {
      if (!kinds.contains(kind)) {
        throw new InvalidConfigurationPropertyValueException(
            RelayKindNames.property(kind, null),
            kind,
            "no handler for this kind in the application context; handlers: " + Set.copyOf(kinds));
      }
    }
    return p;
  }

  /**
   * Checks the bound {@code p} as {@link #check} does, except that a {@code relay.kinds.<kind>}
   * need not have a handler: the runtime's builder is given {@code kinds} (each with its policy),
   * or a stand-in kind when there are none.
   */
  static void checkBound(RelayProperties p, Environment env, Collection<String> kinds) {
    RelaySettings.check(p, env);
    Duration grace = RelaySettings.grace(p, env);
    DataSource never = new PGSimpleDataSource();
    Relay.Builder b = RelaySettings.apply(Relay.builder(never), p, grace);
    if (kinds.isEmpty()) {
      b.handle(STAND_IN_KIND, STAND_IN_POLICY, claim -> Outcome.done());
    }
    for (String kind : kinds) {
      b.handle(kind, RelaySettings.policy(p.getKinds().get(kind)), claim -> Outcome.done());
    }
    try {
      b.build();
    } catch (InvalidConfigurationException e) {
      throw RelaySettings.translate(e, env);
    }
    if (p.getMaintenance().isEnabled()) {
      RelaySettings.named(
          "relay.maintenance.",
          env,
          () -> Maintenance.create(never, never::getConnection, RelaySettings.maintenance(p)));
    }
    ClassLoader loader = RelayStartupCheck.class.getClassLoader();
    if (ClassUtils.isPresent("dev.relay.micrometer.RelayMetrics", loader)) {
      Gauges.check(p, never);
    }
    if (ClassUtils.isPresent("dev.relay.schedule.Scheduler", loader)) {
      Schedules.check(Binder.get(env), p, never);
    }
  }

  /**
   * Checks {@link RelayProperties} as soon as the context has bound them, before any bean of
   * Relay's that takes them exists: whichever of Relay's beans an application's own bean takes
   * first, a bad value fails start-up as {@link InvalidConfigurationPropertyValueException}, which
   * Boot reports naming the property. Kinds are checked with their own policies; that each has a
   * handler is checked once every handler is known ({@link RelayRuntime}).
   */
  static final class OnBind implements BeanPostProcessor {
    private final Environment env;

    OnBind(Environment env) {
      this.env = env;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
      if (bean instanceof RelayProperties p) {
        checkBound(p, env, p.getKinds().keySet());
      }
      return bean;
    }
  }

  /** relay-micrometer's settings; a class of its own, loaded only when relay-micrometer is. */
  private static final class Gauges {
    static void check(RelayProperties p, DataSource never) {
      try {
        RelayMetrics.builder(Admin.create(never, p.getSchema()))
            .refreshInterval(p.getMetricsRefreshInterval())
            .build();
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(
            "relay.metrics-refresh-interval", p.getMetricsRefreshInterval(), e.getMessage());
      }
    }
  }

  /** relay-schedule's settings; a class of its own, loaded only when relay-schedule is. */
  private static final class Schedules {
    static void check(Binder binder, RelayProperties p, DataSource never) {
      RelayScheduleProperties s = binder.bindOrCreate("relay", RelayScheduleProperties.class);
      RelaySchedules.build(never, p.getSchema(), p.isNotifications(), s);
    }
  }
}
