package dev.relay.spring.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Recurring work in the Spring properties, {@code relay.schedules.<name>.*}: each schedule names
 * the kind of the work its slots become, and either a {@code cron} expression with its {@code zone}
 * or an interval {@code every}; {@code missed} is {@code skip}, {@code latest} (the default) or
 * {@code each <window>}. Read only when {@code relay-schedule} is on the classpath.
 */
@ConfigurationProperties("relay")
public class RelayScheduleProperties {
  /** Schedules by name; the name is the first part of each slot's work ID. */
  private Map<String, Definition> schedules = new LinkedHashMap<>();

  /** Time between the scheduler's checks for due slots. */
  private Duration schedulerPollInterval = Duration.ofSeconds(1);

  /** The schedules by name. */
  public Map<String, Definition> getSchedules() {
    return schedules;
  }

  /** Sets the schedules by name. */
  public void setSchedules(Map<String, Definition> schedules) {
    this.schedules = schedules;
  }

  /** Time between checks for due slots. */
  public Duration getSchedulerPollInterval() {
    return schedulerPollInterval;
  }

  /** Sets the time between checks for due slots (10 ms to 1 min). */
  public void setSchedulerPollInterval(Duration schedulerPollInterval) {
    this.schedulerPollInterval = schedulerPollInterval;
  }

  /** One schedule: the kind of its work, its timing and its missed-slot policy. */
  public static class Definition {
    /** Kind of the work each slot becomes (selects its handler). */
    private String kind;

    /** Cron expression: 5 fields, or 6 with seconds first; needs zone. */
    private String cron;

    /** Time zone the cron fields are read in, such as Europe/Berlin or UTC. */
    private String zone;

    /** Fixed interval anchored to the epoch (UTC), 1 s to 366 d; instead of cron. */
    private Duration every;

    /** Missed-slot policy: skip, latest or "each <window>" (such as "each 1h"). */
    private String missed = "latest";

    /** The kind of the work. */
    public String getKind() {
      return kind;
    }

    /** Sets the kind of the work. */
    public void setKind(String kind) {
      this.kind = kind;
    }

    /** The cron expression, or null. */
    public String getCron() {
      return cron;
    }

    /** Sets the cron expression. */
    public void setCron(String cron) {
      this.cron = cron;
    }

    /** The time zone of the cron expression, or null. */
    public String getZone() {
      return zone;
    }

    /** Sets the time zone of the cron expression. */
    public void setZone(String zone) {
      this.zone = zone;
    }

    /** The fixed interval, or null. */
    public Duration getEvery() {
      return every;
    }

    /** Sets the fixed interval. */
    public void setEvery(Duration every) {
      this.every = every;
    }

    /** The missed-slot policy text. */
    public String getMissed() {
      return missed;
    }

    /** Sets the missed-slot policy text. */
    public void setMissed(String missed) {
      this.missed = missed;
    }
  }
}
