package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay status}. */
@Command(name = "status", mixinStandardHelpOptions = true, description = "TODO")
final class StatusCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
