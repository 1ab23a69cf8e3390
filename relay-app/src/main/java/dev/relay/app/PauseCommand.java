package dev.relay.app;

import dev.relay.admin.Admin;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.Pause;
import dev.relay.admin.WorkFilter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code relay pause}: stops every worker from claiming a queue's or a kind's work, audited. */
@Command(
    name = "pause",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Pauses a queue, a kind, or a (queue, kind) pair on every worker, audited.",
    description = {
      "Pauses work across every worker: ready work of the queue and kind is not claimed until `relay resume` or the automatic resume (--for, --until). The claim statement itself checks the pause, so it holds for every worker at once, without restarting any.",
      "",
      "What holds: once this command returns, no claim of the paused work is made (the pause waits for claims in flight to commit). What does not: work claimed before it still runs, and a running call is not recalled. New work is still accepted; delayed and retried work keeps its times. Pausing a target again replaces the reason and the automatic resume, keeping the start.",
      "",
      "relay status shows what is paused and since when.",
      ""
    })
final class PauseCommand extends DbCommand {
  @Mixin PauseTarget target;

  @Mixin AuditOptions audit;

  @Option(
      names = "--for",
      paramLabel = "DURATION",
      converter = Durations.class,
      description =
          "Resume automatically after this long (30m, 2h, PT1H; at most 36500d, 100 years),"
              + " counted from now on this machine's clock.")
  Duration duration;

  @Option(
      names = "--until",
      paramLabel = "INSTANT",
      converter = Instants.class,
      description =
          "Resume automatically at this time (ISO-8601, like 2026-12-03T22:00:00Z; at most 100"
              + " years from now, as --for). A time not after this machine's clock is refused"
              + " before the database is opened; the database's clock decides for one just after"
              + " it.")
  Instant until;

  @Override
  void prepare() {
    if (!target.any()) {
      throw usage("give --queue Q, --kind K, or both");
    }
    target.check(this);
    audit.check(this);
    if (duration != null && until != null) {
      throw usage("give --for or --until, not both");
    }
    if (duration != null && (duration.isNegative() || duration.isZero())) {
      throw usage("--for must be positive, was " + Durations.brief(duration));
    }
    FilterOptions.requireAtMostMaxAge(this, "--for", duration);
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    if (until != null && !until.isAfter(now)) {
      // The same answer whether or not the database is up; a time just after this machine's
      // clock is left to the database's (run), which decides.
      throw usage(
          "--until "
              + until
              + " is not after this machine's clock ("
              + now
              + "): give a time in the future, or leave --until out to pause until resumed");
    }
    Instant latest = now.plus(WorkFilter.MAX_AGE);
    if (until != null && until.isAfter(latest)) {
      // As --for is capped: a resume further away than that is no automatic resume at all.
      throw usage(
          "--until must be at most "
              + Durations.format(WorkFilter.MAX_AGE)
              + " (100 years) from this machine's clock, so no later than "
              + latest
              + ", was "
              + until
              + "; leave --until out to pause until resumed");
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    Instant resumeAt = duration != null ? Instant.now().plus(duration) : until;
    Pause p;
    try {
      p = admin.pause(target.queue, target.kind, audit.actor, audit.reason, resumeAt);
    } catch (InvalidAdminRequestException e) {
      if (!e.field().equals("resumeAt")) {
        throw e;
      }
      throw usage(resumeInPast(e.getMessage()));
    }
    out()
        .println(
            "paused "
                + target.describe()
                + " since "
                + p.pausedAt()
                + (p.resumeAt() == null
                    ? " until resumed (relay resume)"
                    : ", resuming automatically at " + p.resumeAt()));
    return ExitCodes.OK;
  }

  /**
   * The admin API's refusal of an automatic resume that is not after the database clock's now, in
   * the option that gave it: {@code --until 2020-01-01T00:00:00Z is not after ...}, or for {@code
   * --for} (counted on this machine's clock) the time it ends at and why that can be past.
   */
  private String resumeInPast(String message) {
    String m = message.replace("invalid admin request: resumeAt is ", "");
    if (duration == null) {
      return "--until "
          + m.replaceFirst("^(\\S+), not after", "$1 is not after")
              .replace(
                  "give a time in the future, or none to pause until resumed",
                  "give a time in the future, or leave --until out to pause until resumed");
    }
    return "--for "
        + Durations.format(duration)
        + " ends at "
        + m.replace(
            "give a time in the future, or none to pause until resumed",
            "this machine's clock is behind the database's: give a longer --for");
  }
}
