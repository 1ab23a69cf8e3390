package dev.relay.app;

import dev.relay.CancelResult;
import dev.relay.Outbox;
import dev.relay.admin.Admin;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

/** {@code relay cancel}: cancels work, audited. */
@Command(
    name = "cancel",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Cancels work, audited.",
    description = {
      "Cancels work, audited with --actor and --reason. Ready work (also work waiting for a retry) is cancelled at once. Running work gets a cancel request that its worker sees at the next lease renewal; a call already in flight is NOT recalled, and if it completes, the work is recorded done (the effect happened).",
      "",
      "Give one ID (exit 1 when not found, or when it already ended done), or filters (with --limit) to cancel unfinished or failed work in bulk. Cancelling a failed item releases the ordering key it holds.",
      ""
    })
final class CancelCommand extends DbCommand {
  @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "The work ID.")
  String workId;

  @Mixin AuditOptions audit;

  @Mixin FilterOptions filters;

  @Option(
      names = "--with-dependents",
      description =
          "With an ID: also cancel every dependent that waits for it, directly or through other"
              + " waiting dependents (each audited).")
  boolean withDependents;

  @Option(
      names = "--limit",
      paramLabel = "N",
      defaultValue = "100",
      description = "Most items a filtered cancel touches (default: ${DEFAULT-VALUE}).")
  int limit;

  @Override
  void prepare() {
    if ((workId == null) == !filters.any()) {
      throw new ParameterException(
          spec.commandLine(), "give one work ID, or filters such as --kind K --queue Q");
    }
    if (withDependents && workId == null) {
      throw new ParameterException(spec.commandLine(), "--with-dependents needs a work ID");
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
    if (workId != null && withDependents) {
      List<CancelResult> results = admin.cancelWithDependents(workId, audit.actor, audit.reason);
      if (results.get(0).status() == CancelResult.Status.NOT_FOUND) {
        throw CommandFailure.refused("no work has ID '" + workId + "' (never enqueued, or purged)");
      }
      results.forEach(r -> out().println(describe(r)));
      return ExitCodes.OK;
    }
    if (workId != null) {
      CancelResult r = admin.cancel(workId, audit.actor, audit.reason);
      switch (r.status()) {
        case NOT_FOUND ->
            throw CommandFailure.refused(
                "no work has ID '" + workId + "' (never enqueued, or purged)");
        case ALREADY_FINISHED -> {
          if (!"cancelled".equals(r.previousState())) {
            throw CommandFailure.refused(
                "work " + workId + " already ended " + r.previousState() + ": unchanged");
          }
          out().println(describe(r));
        }
        default -> out().println(describe(r));
      }
      return ExitCodes.OK;
    }
    List<CancelResult> results = admin.cancel(filters.filter(), audit.actor, audit.reason, limit);
    for (CancelResult r : results) {
      out().println(describe(r));
    }
    long cancelled =
        results.stream().filter(r -> r.status() == CancelResult.Status.CANCELLED).count();
    long requested =
        results.stream().filter(r -> r.status() == CancelResult.Status.CANCEL_REQUESTED).count();
    out().println(cancelled + " cancelled, " + requested + " cancel requested");
    return ExitCodes.OK;
  }

  private static String describe(CancelResult r) {
    return switch (r.status()) {
      case CANCELLED -> "cancelled " + r.workId() + " (was " + r.previousState() + ")";
      case CANCEL_REQUESTED ->
          "cancel requested for "
              + r.workId()
              + " (running: its worker sees the request at the next lease renewal; an in-flight"
              + " call is not recalled)";
      case ALREADY_FINISHED -> "already " + r.previousState() + ": " + r.workId();
      case NOT_FOUND -> "not found: " + r.workId();
    };
  }
}
