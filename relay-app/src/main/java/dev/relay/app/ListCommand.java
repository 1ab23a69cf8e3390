package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay list}. */
@Command(name = "list", mixinStandardHelpOptions = true, description = "TODO")
final class ListCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
