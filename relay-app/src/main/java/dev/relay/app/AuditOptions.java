package dev.relay.app;

import dev.relay.admin.Admin;
import picocli.CommandLine.Option;

/** Who acts and why: required by every audited action, recorded with it. */
final class AuditOptions {
  @Option(
      names = "--actor",
      paramLabel = "WHO",
      required = true,
      description = "Who asks (recorded in the audit), like mina.")
  String actor;

  @Option(
      names = "--reason",
      paramLabel = "WHY",
      required = true,
      description = "Why (recorded in the audit), like \"provider outage over, INC-42\".")
  String reason;

  /** Checks both against the admin API's bounds, before the database is opened. */
  void check(DbCommand command) {
    command.requireText("--actor", actor, Admin.MAX_ACTOR_LENGTH);
    command.requireText("--reason", reason, Admin.MAX_REASON_LENGTH);
  }
}
