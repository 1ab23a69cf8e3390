package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay purge}. */
@Command(name = "purge", mixinStandardHelpOptions = true, description = "TODO")
final class PurgeCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
