package dev.relay.app;

import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code relay} command. Exit codes: 0 ok, 1 refused or not found, 2 usage error, 3 database
 * unavailable.
 */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
    version = "relay 0.1.0-SNAPSHOT",
    description = "Transactional outbox and durable job queue for Java on PostgreSQL.",
    subcommands = {DemoCommand.class, CommandLine.HelpCommand.class})
public final class RelayCommand implements Callable<Integer> {
  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the command line and returns its exit code. */
  public static int run(String... args) {
    return new CommandLine(new RelayCommand()).execute(args);
  }

  @Override
  public Integer call() {
    new CommandLine(this).usage(System.out);
    return 0;
  }
}
