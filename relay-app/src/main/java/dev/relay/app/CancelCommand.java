package dev.relay.app;

import dev.relay.CancelResult;
import dev.relay.admin.Admin;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkPreview;
import java.util.List;
import java.util.Map;
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
      "",
      "A filtered cancel ends with one line: how many were cancelled, how many running items were asked to stop, how many matching items it refused because they ended done, and how many were already cancelled; when --limit left matching items untouched, it adds how many ('2 more match past --limit 2: run again to take them'). Exit 1 when any matching item ended done (as for one ID): its effect happened, and a correction is new work. Items left past --limit do not change the exit code: the limit is what was asked for.",
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
      description =
          "Most items a filtered cancel touches (1-10000, default: ${DEFAULT-VALUE}); not with an"
              + " ID.")
  int limit;

  @Override
  Map<String, Range> ranges() {
    return Map.of("--limit", new Range(1, Admin.MAX_BATCH));
  }

  @Override
  void prepare() {
    if ((workId == null) == !filters.any()) {
      throw new ParameterException(
          spec.commandLine(), "give one work ID, or filters such as --kind K --queue Q");
    }
    if (withDependents && workId == null) {
      throw new ParameterException(spec.commandLine(), "--with-dependents needs a work ID");
    }
    if (workId != null && given("--limit")) {
      throw usage("--limit bounds a filtered cancel: give filters, or leave --limit out");
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
    return byFilter(admin);
  }

  /**
   * Cancels what the filter selects (ready, running and failed work, up to --limit) and reports
   * every matching item that ended before, as {@code redrive} reports what it refuses: done work is
   * refused (its effect happened; exit 1, as for one ID), cancelled work is already cancelled. The
   * run does not select either, so they are counted first, without locking anything; an item that
   * ended between the selection and its row lock is counted from the run's result.
   */
  private int byFilter(Admin admin) {
    long done = ended(admin, "done");
    long alreadyCancelled = ended(admin, "cancelled");
    // What the run selects (ready and failed work, running work to ask): past --limit, some stay.
    BulkPreview selectable = admin.bulkPreview(filters.filter(), BulkAction.CANCEL, false);
    List<CancelResult> results = admin.cancel(filters.filter(), audit.actor, audit.reason, limit);
    long cancelled = 0;
    long requested = 0;
    for (CancelResult r : results) {
      out().println(describe(r));
      switch (r.status()) {
        case CANCELLED -> cancelled++;
        case CANCEL_REQUESTED -> requested++;
        case ALREADY_FINISHED -> {
          if ("cancelled".equals(r.previousState())) {
            alreadyCancelled++;
          } else {
            done++;
          }
        }
        case NOT_FOUND -> {} // purged between the selection and its row lock
      }
    }
    out()
        .println(
            cancelled
                + " cancelled, "
                + requested
                + " cancel requested, "
                + done
                + " refused: already done (its effect happened), "
                + alreadyCancelled
                + " already cancelled"
                + (endedCapped
                    ? " (ended work counted among the oldest "
                        + Admin.MAX_BULK_PREVIEW
                        + " matching items)"
                    : "")
                + pastLimit(
                    selectable.counts().changed() + selectable.counts().requested(),
                    results.size(),
                    limit,
                    selectable.capped()));
    return done == 0 ? ExitCodes.OK : ExitCodes.REFUSED;
  }

  /** Whether {@link #ended} counted only the oldest {@link Admin#MAX_BULK_PREVIEW} items. */
  private boolean endedCapped;

  /**
   * How many matching items ended in {@code state} (a cancel refuses them all), counted by the
   * admin API's preview; none when the filter names another state.
   */
  private long ended(Admin admin, String state) {
    if (filters.state != null && !filters.state.equals(state)) {
      return 0;
    }
    BulkPreview p = admin.bulkPreview(filters.filter().state(state), BulkAction.CANCEL, false);
    endedCapped |= p.capped();
    return p.counts().refusedState();
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
