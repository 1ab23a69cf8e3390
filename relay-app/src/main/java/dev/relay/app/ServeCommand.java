package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay serve}. */
@Command(name = "serve", mixinStandardHelpOptions = true, description = "TODO")
final class ServeCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
