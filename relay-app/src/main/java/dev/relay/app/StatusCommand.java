package dev.relay.app;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.Admin;
import dev.relay.admin.DurationText;
import dev.relay.admin.Pause;
import dev.relay.admin.QueueHealth;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay status}: health per queue and kind. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    header = "Shows queue health per queue and kind.",
    description = {
      "Shows the health of every (queue, kind) that has work: counts by state, the age of the oldest eligible work (what an alert should watch), running work whose lease expired, and over the window: failures by reason and creation-to-completion p50/p95.",
      "",
      "BLOCKED counts ready work held by a dependency, by reason (dependency_failed, dependency_cancelled, dependency_superseded, dependency_missing); it is part of READY. relay list --blocked lists that work, relay show ID says which dependency holds it.",
      "",
      "Ready, running and failed counts are exact now; done and cancelled come from the summary the maintenance leader recounts on each run, and the output says as of when (--refresh recounts it first, which reads every done and cancelled row).",
      "",
      "--json prints one object: {\"schema\", \"window_seconds\", \"finished_counts_as_of\", \"queues\": [{\"queue\", \"kind\", \"ready\", \"running\", \"done\", \"failed\", \"cancelled\", \"oldest_eligible_age_seconds\", \"expired_leases\", \"blocked_keys\", \"blocked\", \"blocked_by_reason\", \"failures_by_reason\", \"completed_in_window\", \"completion_p50_seconds\", \"completion_p95_seconds\", \"paused_since\"}], \"pauses\": [{\"queue\", \"kind\", \"actor\", \"reason\", \"paused_at\", \"resume_at\"}]}; finished_counts_as_of is null before the first count; oldest_eligible_age_seconds is null (OLDEST_ELIGIBLE -) when none of the pair's work is eligible now (all of it delayed, waiting for a retry, or running within its lease); paused_since is null unless a pause holds the pair; a null queue or kind in pauses means every one.",
      "",
      "Pauses in force (relay pause) are listed under the table with who paused what, since when, why and until when; the held work stays in READY.",
      ""
    })
final class StatusCommand extends DbCommand {
  @Option(
      names = "--window",
      paramLabel = "DURATION",
      defaultValue = "15m",
      converter = Durations.class,
      description = "How far back failures and completion times count (default: ${DEFAULT-VALUE}).")
  Duration window;

  @Option(names = "--json", description = "Prints one JSON object instead of a table.")
  boolean json;

  @Option(
      names = "--refresh",
      description =
          "Recounts done and cancelled work first (normally the maintenance leader's job).")
  boolean refresh;

  @Override
  void prepare() {
    if (window.compareTo(Admin.MIN_HEALTH_WINDOW) < 0
        || window.compareTo(Admin.MAX_HEALTH_WINDOW) > 0) {
      throw usage(
          "--window must be between "
              + Durations.format(Admin.MIN_HEALTH_WINDOW)
              + " and "
              + Durations.format(Admin.MAX_HEALTH_WINDOW)
              + ", was "
              + shown("--window", window));
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    if (refresh) {
      admin.refreshSummary();
    }
    List<QueueHealth> health = admin.health(window);
    List<Pause> pauses = admin.pauses();
    Instant asOf = health.isEmpty() ? null : health.get(0).finishedCountsAsOf();
    if (json) {
      ObjectNode root = Json.object();
      root.put("schema", schema);
      root.put("window_seconds", window.toSeconds());
      root.put("finished_counts_as_of", asOf == null ? null : asOf.toString());
      ArrayNode queues = root.putArray("queues");
      for (QueueHealth h : health) {
        ObjectNode q = queues.addObject();
        q.put("queue", h.queue());
        q.put("kind", h.kind());
        q.put("ready", h.ready());
        q.put("running", h.running());
        q.put("done", h.done());
        q.put("failed", h.failed());
        q.put("cancelled", h.cancelled());
        Json.put(
            q, "oldest_eligible_age_seconds", eligible(h) ? seconds(h.oldestEligibleAge()) : null);
        q.put("expired_leases", h.expiredLeases());
        q.put("blocked_keys", h.blockedKeys());
        q.put("blocked", h.blocked());
        ObjectNode blocked = q.putObject("blocked_by_reason");
        new TreeMap<>(h.blockedByReason()).forEach(blocked::put);
        ObjectNode reasons = q.putObject("failures_by_reason");
        new TreeMap<>(h.failuresByReason()).forEach(reasons::put);
        q.put("completed_in_window", h.completedInWindow());
        Json.put(q, "completion_p50_seconds", h.completionP50());
        Json.put(q, "completion_p95_seconds", h.completionP95());
        q.put("paused_since", h.pausedSince() == null ? null : h.pausedSince().toString());
      }
      ArrayNode paused = root.putArray("pauses");
      for (Pause p : pauses) {
        ObjectNode o = paused.addObject();
        o.put("queue", p.queue());
        o.put("kind", p.kind());
        o.put("actor", p.actor());
        o.put("reason", p.reason());
        o.put("paused_at", p.pausedAt().toString());
        o.put("resume_at", p.resumeAt() == null ? null : p.resumeAt().toString());
      }
      out().println(Json.pretty(root));
      return ExitCodes.OK;
    }
    if (health.isEmpty()) {
      out().println("schema " + schema + ": no work");
      printPauses(pauses);
      return ExitCodes.OK;
    }
    TextTable t =
        new TextTable(
            "QUEUE",
            "KIND",
            "READY",
            "BLOCKED",
            "RUNNING",
            "DONE",
            "FAILED",
            "CANCELLED",
            "OLDEST_ELIGIBLE",
            "EXPIRED_LEASES",
            "FAILURES/" + Durations.brief(window),
            "P50",
            "P95");
    for (QueueHealth h : health) {
      t.row(
          h.queue(),
          h.kind(),
          h.ready(),
          reasons(h.blockedByReason()),
          h.running(),
          h.done(),
          h.failed(),
          h.cancelled(),
          eligible(h) ? Durations.brief(h.oldestEligibleAge()) : null,
          h.expiredLeases(),
          reasons(h.failuresByReason()),
          h.completionP50() == null ? null : latency(h.completionP50()),
          h.completionP95() == null ? null : latency(h.completionP95()));
    }
    t.print(out());
    out()
        .println(
            asOf == null
                ? "DONE and CANCELLED: not counted yet (no maintenance run; --refresh counts now)"
                : "DONE and CANCELLED as of " + asOf + " (recounted by each maintenance run)");
    printPauses(pauses);
    return ExitCodes.OK;
  }

  /** One line per pause in force, after the table; nothing when none is. */
  private void printPauses(List<Pause> pauses) {
    for (Pause p : pauses) {
      out()
          .println(
              "PAUSED "
                  + (p.queue() == null ? "every queue" : "queue " + p.queue())
                  + ", "
                  + (p.kind() == null ? "every kind" : "kind " + p.kind())
                  + " since "
                  + p.pausedAt()
                  + " by "
                  + p.actor()
                  + ": "
                  + p.reason()
                  + (p.resumeAt() == null
                      ? " (until relay resume)"
                      : " (resumes at " + p.resumeAt() + ")"));
    }
  }

  /**
   * Whether any of the pair's work is eligible (claimable) now. The admin API gives {@link
   * Duration#ZERO} as the oldest eligible age when none is, which read as "0s" beside work delayed
   * by an hour; an eligible item's age is zero only in the instant it becomes claimable.
   */
  private static boolean eligible(QueueHealth h) {
    return !h.oldestEligibleAge().isZero();
  }

  private static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  /** A completion time as the console writes one ({@link DurationText#latency}). */
  static String latency(Duration d) {
    return DurationText.latency(d);
  }

  private static String reasons(Map<String, Long> byReason) {
    if (byReason.isEmpty()) {
      return "0";
    }
    StringBuilder sb = new StringBuilder();
    new TreeMap<>(byReason)
        .forEach((k, v) -> sb.append(sb.length() == 0 ? "" : ",").append(k).append('=').append(v));
    return sb.toString();
  }
}
