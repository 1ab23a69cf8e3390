package dev.relay.app;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.Admin;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkCounts;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.BulkProgress;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code relay purge}: retention, now, in bounded batches; or, with filters, a bulk purge of the
 * matching done and cancelled work ({@link BulkAction#PURGE}).
 */
@Command(
    name = "purge",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Deletes old (or chosen) done and cancelled work, leaving tombstones.",
    description = {
      "Deletes done and cancelled work that ended longer ago than --retention AND than its kind's deduplication horizon, in bounded batches. What workers completed or cancelled lives in the history table (schema version 25) and goes a whole UTC day at a time, once the day ended longer ago than --retention and than every kind's horizon (one batch a day, no row deleted one by one). Failed work is never purged (it waits for an operator). Each purged item leaves a tombstone (ID, kind, payload digest, last generation, outcome), so a late producer retry is still recognised and a different payload under that ID still refused; tombstones go after --identity-horizon. Attempt history and audit rows go after --history-retention, once their work is purged or ended done or cancelled. --dry-run counts what is eligible now and changes nothing. With --actor and --reason, the run is recorded in the purge audit.",
      "",
      "With filters (--state, --kind, --queue, ...; they combine with AND) and --actor and --reason: purges every matching item that is done or cancelled and ended longer ago than its kind's deduplication horizon, whatever --retention says, each with the same tombstone and one audit row with --actor and --reason, in batches of 200 (each one short transaction). Refused and left as they are: running work, ready and failed work (redrive or cancel it first), and work that ended within its kind's horizon. The bulk action is stored (the console's Bulk actions page shows it); --dry-run counts what would be purged and refused and writes nothing. Exit 1 when any matching item was refused.",
      ""
    })
final class PurgeCommand extends DbCommand {
  @Option(
      names = "--retention",
      paramLabel = "DURATION",
      defaultValue = "7d",
      converter = Durations.class,
      description =
          "Keep done and cancelled work this long after it ended (default: ${DEFAULT-VALUE}).")
  Duration retention;

  @Option(
      names = "--history-retention",
      paramLabel = "DURATION",
      defaultValue = "30d",
      converter = Durations.class,
      description = "Keep attempt history and audit rows this long (default: ${DEFAULT-VALUE}).")
  Duration historyRetention;

  @Option(
      names = "--identity-horizon",
      paramLabel = "DURATION",
      defaultValue = "90d",
      converter = Durations.class,
      description =
          "Keep tombstones this long after their work was purged (default: ${DEFAULT-VALUE}).")
  Duration identityHorizon;

  @Option(
      names = "--batch-size",
      paramLabel = "N",
      defaultValue = "1000",
      description = "Rows per batch, each its own short transaction (default: ${DEFAULT-VALUE}).")
  int batchSize;

  @Option(
      names = "--max-batches",
      paramLabel = "N",
      defaultValue = "100",
      description = "Most batches per table in this run (default: ${DEFAULT-VALUE}).")
  int maxBatches;

  @Option(names = "--dry-run", description = "Counts what would be purged; changes nothing.")
  boolean dryRun;

  @Option(names = "--json", description = "Prints one JSON object.")
  boolean json;

  @Mixin FilterOptions filters;

  @Option(
      names = "--actor",
      paramLabel = "WHO",
      description = "Who asks (recorded in the audit), like mina. Required with filters.")
  String actor;

  @Option(
      names = "--reason",
      paramLabel = "WHY",
      description =
          "Why (recorded in the audit), like \"test traffic of INC-50\". Required with filters.")
  String reason;

  /** The options of the retention purge, which a purge by filter does not use. */
  private static final List<String> RETENTION_OPTIONS =
      List.of(
          "--retention",
          "--history-retention",
          "--identity-horizon",
          "--batch-size",
          "--max-batches");

  private PurgePolicy policy;

  /**
   * Checks the policy before the database is opened (or the embedded one created), so that a bad
   * value is a usage error that starts nothing. The bounds are Admin's, which checks them again.
   */
  @Override
  Map<String, Range> ranges() {
    return Map.of(
        "--batch-size", new Range(1, PurgePolicy.MAX_BATCH_SIZE),
        "--max-batches", new Range(1, PurgePolicy.MAX_BATCHES));
  }

  @Override
  void prepare() {
    if ((actor == null) != (reason == null)) {
      throw usage("give both --actor and --reason, or neither");
    }
    requireText("--actor", actor, Admin.MAX_ACTOR_LENGTH);
    requireText("--reason", reason, Admin.MAX_REASON_LENGTH);
    filters.check(this);
    if (filters.any()) {
      if (actor == null && !dryRun) {
        throw usage("a purge by filter needs --actor and --reason (each purged item is audited)");
      }
      for (String option : RETENTION_OPTIONS) {
        if (spec.commandLine().getParseResult().hasMatchedOption(option)) {
          throw usage(
              option
                  + " applies to the retention purge; a purge by filter takes every matching item"
                  + " past its kind's deduplication horizon");
        }
      }
      return;
    }
    within("--retention", retention);
    within("--history-retention", historyRetention);
    within("--identity-horizon", identityHorizon);
    requireRange("--batch-size", batchSize);
    requireRange("--max-batches", maxBatches);
    policy = new PurgePolicy(retention, historyRetention, identityHorizon, batchSize, maxBatches);
  }

  private void within(String option, Duration d) {
    if (d.compareTo(PurgePolicy.MIN_RETENTION) < 0 || d.compareTo(PurgePolicy.MAX_RETENTION) > 0) {
      throw usage(
          option
              + " must be between "
              + Durations.format(PurgePolicy.MIN_RETENTION)
              + " and "
              + Durations.format(PurgePolicy.MAX_RETENTION)
              + ", was "
              + typed(option, d));
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    if (filters.any()) {
      return byFilter(admin);
    }
    PurgeResult r =
        actor == null ? admin.purge(policy, dryRun) : admin.purge(policy, dryRun, actor, reason);
    if (json) {
      ObjectNode o = Json.object();
      o.put("dry_run", r.dryRun());
      o.put("work", r.work());
      o.put("history_days", r.historyDays());
      o.put("tombstones", r.tombstones());
      o.put("attempts", r.attempts());
      o.put("audits", r.audits());
      o.put("complete", r.complete());
      out().println(Json.write(o));
      return ExitCodes.OK;
    }
    out()
        .printf(
            "%s: %d work items (each leaves a tombstone; %d whole days of history among them),"
                + " %d tombstones, %d attempt rows, %d audit rows%s%n",
            r.dryRun() ? "would purge" : "purged",
            r.work(),
            r.historyDays(),
            r.tombstones(),
            r.attempts(),
            r.audits(),
            r.complete() ? "" : "; more remains (batch limit reached): run again");
    return ExitCodes.OK;
  }

  /** A bulk purge of the filter's items: counted with --dry-run, otherwise stored and run. */
  private int byFilter(Admin admin) {
    BulkCounts c;
    Long id = null;
    if (dryRun) {
      BulkPreview p = admin.bulkPreview(filters.filter(), BulkAction.PURGE, false);
      c = p.counts();
    } else {
      BulkProgress started =
          admin.startBulk(filters.filter(), BulkAction.PURGE, false, actor, reason);
      id = started.id();
      c = admin.runBulk(started.id()).counts();
    }
    if (json) {
      ObjectNode o = Json.object();
      o.put("dry_run", dryRun);
      if (id != null) {
        o.put("bulk_id", id);
      }
      o.put("matching", c.matching());
      o.put("purged", c.changed());
      o.put("refused_running", c.refusedRunning());
      o.put("refused_not_finished", c.refusedState());
      o.put("refused_within_horizon", c.refusedHorizon());
      o.put("gone", c.gone());
      out().println(Json.write(o));
    } else {
      out()
          .printf(
              "%s%s: %d of %d matching items (each leaves a tombstone); refused: %d running,"
                  + " %d not done or cancelled, %d ended within their kind's deduplication"
                  + " horizon%s%n",
              dryRun ? "would purge" : "purged",
              id == null ? "" : " (bulk action " + id + ")",
              c.changed(),
              c.matching(),
              c.refusedRunning(),
              c.refusedState(),
              c.refusedHorizon(),
              c.gone() == 0 ? "" : "; " + c.gone() + " gone meanwhile");
    }
    return dryRun || c.refused() == 0 ? ExitCodes.OK : ExitCodes.REFUSED;
  }
}
