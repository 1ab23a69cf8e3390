package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay cancel}. */
@Command(name = "cancel", mixinStandardHelpOptions = true, description = "TODO")
final class CancelCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
