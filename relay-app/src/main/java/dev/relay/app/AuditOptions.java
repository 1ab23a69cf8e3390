package dev.relay.app;

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
}
