package dev.relay.app;

import dev.relay.Migrator;
import picocli.CommandLine.Command;

/** {@code relay migrate}: creates or upgrades the schema. */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    header = "Creates or upgrades the schema.",
    description = {
      "Creates or upgrades Relay's schema to the version this relay needs. Idempotent, and safe to run from several processes at once (an advisory lock serialises them). Refuses (exit 1), changing nothing, a schema migrated by a newer Relay, one whose applied versions differ from the SQL this relay ships (an edited migration), and one with a version missing below the highest applied (a gap).",
      ""
    })
final class MigrateCommand extends DbCommand {
  @Override
  int run(Database db) {
    Migrator.Report r = Migrator.migrate(db.dataSource(), schema);
    if (r.applied().isEmpty()) {
      out().println("schema " + r.schema() + " is at version " + r.currentVersion() + ": current");
    } else {
      out()
          .println(
              "schema "
                  + r.schema()
                  + " migrated from version "
                  + r.previousVersion()
                  + " to "
                  + r.currentVersion()
                  + " (applied "
                  + r.applied()
                  + ")");
    }
    return ExitCodes.OK;
  }
}
