package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay redrive}. */
@Command(name = "redrive", mixinStandardHelpOptions = true, description = "TODO")
final class RedriveCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
