package dev.relay.app;

import picocli.CommandLine.Command;

/** {@code relay supersede}. */
@Command(name = "supersede", mixinStandardHelpOptions = true, description = "TODO")
final class SupersedeCommand extends DbCommand {
  @Override
  int run(Database db) {
    return ExitCodes.OK;
  }
}
