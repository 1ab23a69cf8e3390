package dev.relay.app;

import dev.relay.Outbox;
import dev.relay.admin.Admin;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import java.util.List;
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
      "Give one ID, or filters (with --limit) to redrive many, each checked on its own; exit 1 when any was refused.",
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
      description = "Most items a filtered redrive touches (default: ${DEFAULT-VALUE}).")
  int limit;

  @Override
  void prepare() {
    if ((workId == null) == !filters.any()) {
      throw new ParameterException(
          spec.commandLine(), "give one work ID, or filters such as --state failed --kind K");
    }
    requireText("ID", workId, Outbox.MAX_WORK_ID_LENGTH);
    audit.check(this);
    filters.check(this);
    requireRange("--limit", limit, 1, Admin.MAX_BATCH);
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
        throw CommandFailure.refused("refused: " + e.getMessage() + hint(e.reason()));
      }
      out().println(describe(r));
      return ExitCodes.OK;
    }
    List<RedriveResult> results = admin.redrive(filters.filter(), request, limit);
    long refused = results.stream().filter(r -> !r.redriven()).count();
    for (RedriveResult r : results) {
      out().println(describe(r));
    }
    out().println((results.size() - refused) + " redriven, " + refused + " refused");
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
    return "refused " + r.workId() + ": " + r.message() + hint(r.refusal());
  }

  private static String hint(RedriveRefusedException.Reason reason) {
    if (reason == null) {
      return "";
    }
    return switch (reason) {
      case NOT_FAILED -> " [--force overrides]";
      case PAST_DEDUP_HORIZON ->
          " [--override-horizon overrides, at the risk of a repeated effect]";
      case RUNNING -> " [never overridable: cancel it, or wait for it to end]";
    };
  }
}
