package dev.relay.app;

import dev.relay.admin.WorkFilter;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The work filter shared by {@code list}, {@code redrive}, {@code cancel} and {@code purge};
 * options combine with AND.
 */
final class FilterOptions {
  @Option(
      names = "--state",
      paramLabel = "STATE",
      description = "Only work in STATE: ready, running, done, failed or cancelled.")
  String state;

  @Option(names = "--kind", paramLabel = "KIND", description = "Only work of KIND.")
  String kind;

  @Option(names = "--queue", paramLabel = "QUEUE", description = "Only work in QUEUE.")
  String queue;

  @Option(names = "--key", paramLabel = "KEY", description = "Only work with ordering key KEY.")
  String key;

  @Option(
      names = "--older-than",
      paramLabel = "AGE",
      converter = Durations.class,
      description = "Only work created at least AGE ago (30s, 5m, 2h, 7d).")
  Duration olderThan;

  @Option(
      names = "--newer-than",
      paramLabel = "AGE",
      converter = Durations.class,
      description = "Only work created less than AGE ago.")
  Duration newerThan;

  @Option(
      names = "--error-kind",
      paramLabel = "KIND",
      description = "Only work whose last error kind is KIND (like deadline, timeout).")
  String errorKind;

  @Option(
      names = "--outcome",
      paramLabel = "OUTCOME",
      description = "Only work with outcome evidence OUTCOME: delivered, not_delivered, unknown.")
  String outcome;

  @Option(
      names = "--blocked",
      description =
          "Only ready work held by a dependency that failed, was cancelled or superseded, or is"
              + " gone (directly or through the work it waits for).")
  boolean blocked;

  @Option(
      names = "--blocked-reason",
      paramLabel = "REASON",
      description =
          "Only work held for REASON: dependency_failed, dependency_cancelled,"
              + " dependency_superseded, dependency_missing (implies --blocked).")
  String blockedReason;

  /**
   * Checks every value against the admin API's rules (kinds, queues and ordering keys against
   * enqueue's), before the database is opened: a bad value is a usage error naming its option, also
   * when the database is down or the schema not migrated.
   */
  void check(DbCommand command) {
    command.requireName("--kind", kind); // kinds and queues by enqueue's rule: a name no work
    command.requireName("--queue", queue); // can have matches nothing
    command.requireOrderingKey("--key", key);
    oneOf(command, "--state", state, WorkFilter.STATES);
    oneOf(command, "--outcome", outcome, WorkFilter.OUTCOMES);
    oneOf(command, "--blocked-reason", blockedReason, WorkFilter.BLOCKED_REASONS);
    requireAtMostMaxAge(command, "--older-than", olderThan);
    requireAtMostMaxAge(command, "--newer-than", newerThan);
  }

  private static void oneOf(DbCommand command, String option, String value, List<String> allowed) {
    if (value != null && !allowed.contains(value)) {
      throw command.usage(option + " '" + value + "' is not one of " + String.join(", ", allowed));
    }
  }

  /**
   * A usage error unless {@code value} of {@code option} is at most {@link WorkFilter#MAX_AGE} (100
   * years), the bound of every duration the commands take.
   */
  static void requireAtMostMaxAge(DbCommand command, String option, Duration value) {
    if (value != null && value.compareTo(WorkFilter.MAX_AGE) > 0) {
      throw command.usage(
          option
              + " must be at most "
              + Durations.format(WorkFilter.MAX_AGE)
              + " (100 years), was "
              + command.shown(option, value));
    }
  }

  /** Whether any criterion was given. */
  boolean any() {
    return state != null
        || kind != null
        || queue != null
        || key != null
        || olderThan != null
        || newerThan != null
        || errorKind != null
        || outcome != null
        || blocked
        || blockedReason != null;
  }

  WorkFilter filter() {
    WorkFilter f = WorkFilter.all();
    if (state != null) {
      f = f.state(state);
    }
    if (kind != null) {
      f = f.kind(kind);
    }
    if (queue != null) {
      f = f.queue(queue);
    }
    if (key != null) {
      f = f.orderingKey(key);
    }
    if (olderThan != null) {
      f = f.olderThan(olderThan);
    }
    if (newerThan != null) {
      f = f.newerThan(newerThan);
    }
    if (errorKind != null) {
      f = f.errorKind(errorKind);
    }
    if (outcome != null) {
      f = f.outcome(outcome);
    }
    if (blockedReason != null) {
      f = f.blockedReason(blockedReason);
    } else if (blocked) {
      f = f.blocked();
    }
    return f;
  }
}
