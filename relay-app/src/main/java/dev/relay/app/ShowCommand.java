package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay show}. */
@Command(name = "show", mixinStandardHelpOptions = true, description = "TODO")
final class ShowCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
