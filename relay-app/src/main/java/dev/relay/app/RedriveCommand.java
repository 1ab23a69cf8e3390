package dev.relay.app;

import dev.relay.admin.Admin;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

/** {@code relay redrive}: runs failed work again, audited. */
@Command(
    name = "redrive",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Runs failed work again, audited.",
    description = {
      "Puts failed work back to ready: same work ID and payload, a new attempt budget, and the claim generation keeps rising (a late write of an old claim is still refused). Each redrive is audited with --actor and --reason.",
      "",
      "Refused (exit 1, nothing changed): running work, always; work that is not failed, unless --force; work whose first attempt is older than its kind's deduplication horizon, unless --override-horizon: past it the receiver may have forgotten the ID and apply the same work twice. A corrected payload is not a redrive: use supersede.",
      "",
      "Give one ID, or filters (with --limit) to redrive many, each checked on its own. A filtered redrive selects the matching failed work (with --force: all but running work), oldest first, up to --limit, and ends with one line: how many were redriven and how many matching items were refused, by reason (not failed, running, past their kind's deduplication horizon), counting also the matching items it did not select because of their state; when --limit left matching items it would have taken, it adds how many ('2 more match past --limit 2: run again to take them'). Exit 1 when any matching item was refused; items left past --limit do not change the exit code.",
      ""
    })
final class RedriveCommand extends DbCommand {
  @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "The work ID.")
  String workId;

  @Mixin AuditOptions audit;

  @Option(
      names = "--force",
      description = "Also redrive work that is not failed (never running work).")
  boolean force;

  @Option(
      names = "--override-horizon",
      description =
          "Redrive even past the kind's deduplication horizon (the receiver may repeat the effect).")
  boolean overrideHorizon;

  @Mixin FilterOptions filters;

  @Option(
      names = "--limit",
      paramLabel = "N",
      defaultValue = "100",
      description =
          "Most items a filtered redrive touches (1-10000, default: ${DEFAULT-VALUE}); not with"
              + " an ID.")
  int limit;

  @Override
  Map<String, Range> ranges() {
    return Map.of("--limit", new Range(1, Admin.MAX_BATCH));
  }

  @Override
  void prepare() {
    if ((workId == null) == !filters.any()) {
      throw new ParameterException(
          spec.commandLine(), "give one work ID, or filters such as --state failed --kind K");
    }
    if (workId != null && given("--limit")) {
      throw usage("--limit bounds a filtered redrive: give filters, or leave --limit out");
    }
    requireWorkId("ID", workId);
    audit.check(this);
    filters.check(this);
    requireRange("--limit", limit);
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    RedriveRequest request = new RedriveRequest(audit.actor, audit.reason, force, overrideHorizon);
    if (workId != null) {
      RedriveResult r;
      try {
        r = admin.redrive(workId, request);
      } catch (RedriveRefusedException e) {
        throw CommandFailure.refused("refused: " + inOptions(e.getMessage()) + hint(e.reason()));
      }
      out().println(describe(r));
      return ExitCodes.OK;
    }
    return byFilter(admin, request);
  }

  /**
   * Redrives what the filter selects (failed work, or with --force any that is not running, up to
   * --limit) and reports every matching item it refused, selected or not, so that a filter that
   * matches only work a redrive refuses is not "0 redriven, 0 refused".
   *
   * <p>Two sources, each item counted once: before the run, the preview counts the matching items
   * the run does not select because of their state (running work; work that is not failed, without
   * --force); the run reports its own items, among them those it refused under their row lock (past
   * the deduplication horizon, or changed since the selection). The preview's horizon count is not
   * used: those items are failed ones the run selects and judges itself (and takes with
   * --override-horizon).
   */
  private int byFilter(Admin admin, RedriveRequest request) {
    BulkPreview before = admin.bulkPreview(filters.filter(), BulkAction.REDRIVE, force);
    List<RedriveResult> results = admin.redrive(filters.filter(), request, limit);
    long redriven = 0;
    long running = before.counts().refusedRunning();
    long notFailed = before.counts().refusedState();
    long pastHorizon = 0;
    for (RedriveResult r : results) {
      out().println(describe(r));
      if (r.redriven()) {
        redriven++;
      } else if (r.refusal() == RedriveRefusedException.Reason.RUNNING) {
        running++; // claimed between the selection and the row lock
      } else if (r.refusal() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON) {
        pastHorizon++;
      } else {
        notFailed++; // ended otherwise between the selection and the row lock
      }
    }
    long refused = running + notFailed + pastHorizon;
    out()
        .println(
            redriven
                + " redriven, "
                + refused
                + " refused: "
                + notFailed
                + " not failed"
                + (notFailed > 0 ? hint(RedriveRefusedException.Reason.NOT_FAILED) : "")
                + ", "
                + running
                + " running"
                + (running > 0 ? hint(RedriveRefusedException.Reason.RUNNING) : "")
                + ", "
                + pastHorizon
                + " past their kind's deduplication horizon"
                + (pastHorizon > 0 ? hint(RedriveRefusedException.Reason.PAST_DEDUP_HORIZON) : "")
                + (before.capped()
                    ? " (not failed and running counted among the oldest "
                        + Admin.MAX_BULK_PREVIEW
                        + " matching items)"
                    : "")
                // The run selects what the preview redrives or finds past the horizon.
                + pastLimit(
                    before.counts().changed() + before.counts().refusedHorizon(),
                    results.size(),
                    limit,
                    before.capped()));
    return refused == 0 ? ExitCodes.OK : ExitCodes.REFUSED;
  }

  private static String describe(RedriveResult r) {
    if (r.redriven()) {
      return "redriven "
          + r.workId()
          + " (was "
          + r.fromState()
          + " at generation "
          + r.fromGeneration()
          + (r.forced() ? ", with an override" : "")
          + ")";
    }
    return "refused " + r.workId() + ": " + inOptions(r.message()) + hint(r.refusal());
  }

  /**
   * The admin API's account of a refusal without its name for the override ("(force)"), which
   * {@link #hint} gives as the option.
   */
  private static String inOptions(String message) {
    return message == null
        ? ""
        : message.replace(
            "; redriving it runs it again, so say so explicitly (force)",
            "; redriving it runs it again");
  }

  private static String hint(RedriveRefusedException.Reason reason) {
    if (reason == null) {
      return "";
    }
    return switch (reason) {
      case NOT_FAILED -> " [--force overrides]";
      case PAST_DEDUP_HORIZON ->
          " [--override-horizon overrides, at the risk of a repeated effect]";
      case RUNNING -> " [never overridable]"; // the account says: cancel it, or wait
    };
  }
}
