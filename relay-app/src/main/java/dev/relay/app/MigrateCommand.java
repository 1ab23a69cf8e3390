package dev.relay.app;

import dev.relay.InvalidConfigurationException;
import dev.relay.Migrator;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay migrate}: creates or upgrades the schema, and with {@code --roles} its roles. */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    header = "Creates or upgrades the schema (and its roles).",
    description = {
      "Creates or upgrades Relay's schema to the version this relay needs. Idempotent, and safe to run from several processes at once (an advisory lock serialises them). Refuses (exit 1), changing nothing, a schema migrated by a newer Relay, one whose applied versions differ from the SQL this relay ships (an edited migration), and one with a version missing below the highest applied (a gap).",
      "",
      "With --roles it then creates the roles <schema>_producer, <schema>_worker, <schema>_scheduler and <schema>_operator (NOLOGIN, when missing) and gives them exactly the grants of Relay's catalog, in one transaction; re-running it is safe. Run it as the schema owner, with CREATEROLE when a role is missing. With --print-sql it only prints that SQL (no database is opened).",
      ""
    })
final class MigrateCommand extends DbCommand {
  /** Migrating creates tables: the schema's owner's, not one of the roles it grants. */
  @Override
  String permissionHint() {
    return "relay migrate runs as the schema's owner (a user that owns schema "
        + schema
        + " or may create it; with --roles, one with CREATEROLE while a role is missing)";
  }

  @Option(
      names = "--roles",
      description =
          "After migrating, create the schema's four roles and grant them exactly what Relay's"
              + " catalog says (docs/operations.md, roles).")
  boolean roles;

  @Option(
      names = "--print-sql",
      description =
          "With --roles: print the roles' SQL for the schema instead of running anything.")
  boolean printSql;

  @Override
  void prepare() {
    if (printSql && !roles) {
      throw usage("--print-sql prints the roles' SQL: use it with --roles");
    }
    if (roles) {
      String sql;
      try {
        sql = Migrator.forSchema(schema).rolesSql(); // a name too long for roles: refused here
      } catch (InvalidConfigurationException e) {
        throw usage(e.getMessage().replace("invalid setting schema: ", "--schema "));
      }
      if (printSql) {
        out().print(sql);
      }
    }
  }

  @Override
  boolean needsDatabase() {
    return !printSql;
  }

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
    if (roles) {
      List<String> granted = Migrator.forSchema(schema).grantRoles(db.dataSource());
      out().println("roles " + String.join(", ", granted) + " granted as Relay's catalog says");
    }
    return ExitCodes.OK;
  }
}
