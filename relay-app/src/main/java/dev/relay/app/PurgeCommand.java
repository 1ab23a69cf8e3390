package dev.relay.app;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.Admin;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay purge}: retention, now, in bounded batches. */
@Command(
    name = "purge",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Deletes old done and cancelled work, leaving tombstones.",
    description = {
      "Deletes done and cancelled work that ended longer ago than --retention AND than its kind's deduplication horizon, in bounded batches. Failed work is never purged (it waits for an operator). Each purged item leaves a tombstone (ID, kind, payload digest, last generation, outcome), so a late producer retry is still recognised and a different payload under that ID still refused; tombstones go after --identity-horizon. Attempt history and audit rows go after --history-retention, once their work is purged or ended done or cancelled. --dry-run counts what is eligible now and changes nothing.",
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

  private PurgePolicy policy;

  /**
   * Checks the policy before the database is opened (or the embedded one created), so that a bad
   * value is a usage error that starts nothing. The bounds are Admin's, which checks them again.
   */
  @Override
  void prepare() {
    within("--retention", retention);
    within("--history-retention", historyRetention);
    within("--identity-horizon", identityHorizon);
    if (batchSize < 1 || batchSize > 10_000) {
      throw usage("--batch-size must be between 1 and 10000, was " + batchSize);
    }
    if (maxBatches < 1 || maxBatches > 100_000) {
      throw usage("--max-batches must be between 1 and 100000, was " + maxBatches);
    }
    policy = new PurgePolicy(retention, historyRetention, identityHorizon, batchSize, maxBatches);
  }

  private void within(String option, Duration d) {
    if (d.compareTo(Duration.ofMinutes(1)) < 0 || d.compareTo(Duration.ofDays(36_500)) > 0) {
      throw usage(option + " must be between 1m and 36500d, was " + d);
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    PurgeResult r = Admin.create(db.dataSource(), schema).purge(policy, dryRun);
    if (json) {
      ObjectNode o = Json.object();
      o.put("dry_run", r.dryRun());
      o.put("work", r.work());
      o.put("tombstones", r.tombstones());
      o.put("attempts", r.attempts());
      o.put("audits", r.audits());
      o.put("complete", r.complete());
      out().println(Json.write(o));
      return ExitCodes.OK;
    }
    out()
        .printf(
            "%s: %d work items (each leaves a tombstone), %d tombstones, %d attempt rows,"
                + " %d audit rows%s%n",
            r.dryRun() ? "would purge" : "purged",
            r.work(),
            r.tombstones(),
            r.attempts(),
            r.audits(),
            r.complete() ? "" : "; more remains (batch limit reached): run again");
    return ExitCodes.OK;
  }
}
