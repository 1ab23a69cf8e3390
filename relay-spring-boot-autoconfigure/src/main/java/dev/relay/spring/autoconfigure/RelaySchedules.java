package dev.relay.spring.autoconfigure;

import dev.relay.InvalidConfigurationException;
import dev.relay.Schedule;
import dev.relay.ScheduleException;
import dev.relay.schedule.Scheduler;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.context.SmartLifecycle;

/**
 * The {@link Scheduler} of the {@code relay.schedules.*} properties, started with the context and
 * closed in its shutdown. Built (and so validated) when the bean is created: an invalid schedule
 * fails start-up with the property that holds it.
 */
public final class RelaySchedules implements SmartLifecycle {
  private static final String PREFIX = "relay.schedules.";

  private final Scheduler scheduler; // null: no schedules configured
  private volatile boolean running;

  RelaySchedules(Scheduler scheduler) {
    this.scheduler = scheduler;
  }

  /** Validates every schedule of {@code properties} and builds their scheduler. */
  static RelaySchedules build(
      DataSource dataSource, String schema, boolean notifications, RelayScheduleProperties p) {
    if (p.getSchedules().isEmpty()) {
      return new RelaySchedules(null);
    }
    Scheduler.Builder b =
        Scheduler.builder(dataSource)
            .schema(schema)
            .notifications(notifications)
            .pollInterval(p.getSchedulerPollInterval());
    for (Map.Entry<String, RelayScheduleProperties.Definition> e : p.getSchedules().entrySet()) {
      String name = e.getKey();
      RelayScheduleProperties.Definition d = e.getValue();
      Schedule schedule = schedule(name, d);
      try {
        Scheduler.validate(name, d.getKind(), schedule);
      } catch (ScheduleException ex) {
        throw invalid(name, d, ex);
      }
      b.schedule(name, d.getKind(), schedule);
    }
    try {
      return new RelaySchedules(b.build());
    } catch (InvalidConfigurationException ex) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.scheduler-poll-interval", p.getSchedulerPollInterval(), ex.getMessage());
    }
  }

  private static Schedule schedule(String name, RelayScheduleProperties.Definition d) {
    String at = PREFIX + name;
    if (d.getKind() == null) {
      throw new InvalidConfigurationPropertyValueException(
          at + ".kind", null, "a schedule needs the kind of the work its slots become");
    }
    if ((d.getCron() == null) == (d.getEvery() == null)) {
      throw new InvalidConfigurationPropertyValueException(
          at + ".cron", d.getCron(), "give either cron (with zone) or every, not both or neither");
    }
    try {
      Schedule s;
      if (d.getCron() != null) {
        if (d.getZone() == null) {
          throw new InvalidConfigurationPropertyValueException(
              at + ".zone", null, "cron needs a zone, such as Europe/Berlin or UTC");
        }
        s = Schedule.cron(d.getCron(), d.getZone());
      } else {
        s = Schedule.every(d.getEvery());
      }
      return s.missedSlots(missed(at, d.getMissed()));
    } catch (ScheduleException ex) {
      throw invalid(name, d, ex);
    }
  }

  private static Schedule.MissedSlots missed(String at, String text) {
    String t = text == null ? "latest" : text.strip();
    if (t.equals("skip")) {
      return Schedule.MissedSlots.skip();
    }
    if (t.equals("latest")) {
      return Schedule.MissedSlots.latest();
    }
    if (t.startsWith("each ")) {
      Duration window;
      try {
        window = DurationStyle.detectAndParse(t.substring(5).strip());
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(
            at + ".missed", text, "the window of 'each <window>' is not a duration, such as 1h");
      }
      return Schedule.MissedSlots.each(window);
    }
    throw new InvalidConfigurationPropertyValueException(
        at + ".missed", text, "must be skip, latest or each <window> (such as each 1h)");
  }

  /** The property behind a refused schedule. */
  private static InvalidConfigurationPropertyValueException invalid(
      String name, RelayScheduleProperties.Definition d, ScheduleException ex) {
    String at = PREFIX + name;
    return switch (ex.problem()) {
      case INVALID_CRON ->
          new InvalidConfigurationPropertyValueException(
              at + ".cron", d.getCron(), ex.getMessage());
      case UNKNOWN_ZONE ->
          new InvalidConfigurationPropertyValueException(
              at + ".zone", d.getZone(), ex.getMessage());
      case INVALID_INTERVAL ->
          new InvalidConfigurationPropertyValueException(
              at + ".every", d.getEvery(), ex.getMessage());
      case INVALID_MISSED_SLOTS ->
          new InvalidConfigurationPropertyValueException(
              at + ".missed", d.getMissed(), ex.getMessage());
      default ->
          ex.getMessage().contains("kind '")
              ? new InvalidConfigurationPropertyValueException(
                  at + ".kind", d.getKind(), ex.getMessage())
              : new InvalidConfigurationPropertyValueException(at, name, ex.getMessage());
    };
  }

  /** The scheduler, or empty when no schedule is configured. */
  public Optional<Scheduler> scheduler() {
    return Optional.ofNullable(scheduler);
  }

  @Override
  public void start() {
    if (scheduler != null) {
      scheduler.start();
    }
    running = true;
  }

  @Override
  public void stop() {
    if (scheduler != null) {
      scheduler.close();
    }
    running = false;
  }

  @Override
  public boolean isRunning() {
    return running;
  }
}
