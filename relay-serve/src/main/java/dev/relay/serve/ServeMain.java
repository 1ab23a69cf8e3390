package dev.relay.serve;

import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The entry point of {@code relay serve} and {@code relay passwd} (the {@code relay} script routes
 * both here). Exit codes: 0 ok, 1 refused (an old schema), 2 usage or config error, 3 database
 * unavailable. A started {@code serve} keeps running after {@link #run} returns, until SIGTERM.
 */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
    version = "relay 0.1.0-SNAPSHOT",
    subcommands = {ServeCommand.class, PasswdCommand.class, CommandLine.HelpCommand.class},
    description = "relay serve: workers, schedules, the console and Actuator; relay passwd.")
public final class ServeMain implements Callable<Integer> {
  /** Success. */
  static final int OK = 0;

  /** Refused: the schema is not migrated, or is newer than this relay. */
  static final int REFUSED = 1;

  /** A usage or config error. */
  static final int USAGE = 2;

  /** The database cannot be reached or started. */
  static final int DATABASE_UNAVAILABLE = 3;

  private final InputStream in;
  private final PrintStream out;

  ServeMain(InputStream in, PrintStream out) {
    this.in = in;
    this.out = out;
  }

  /** Runs the command line; exits with its code unless {@code serve} is now running. */
  public static void main(String[] args) {
    ServeMain main = new ServeMain(System.in, System.out);
    int code = main.run(System.err, args);
    if (code != OK || main.serving == null) {
      System.exit(code);
    }
  }

  /** The running {@code serve}, once started. */
  Serving serving;

  /** Runs {@code args}, reporting errors on {@code err}; returns the exit code. */
  int run(PrintStream err, String... args) {
    CommandLine cl = new CommandLine(this);
    cl.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
    cl.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          if (ex instanceof ServeFailure f) {
            cmd.getErr().println("relay " + cmd.getCommandName() + ": " + f.getMessage());
            return f.exitCode();
          }
          throw ex;
        });
    return cl.execute(args);
  }

  InputStream in() {
    return in;
  }

  PrintStream out() {
    return out;
  }

  @Override
  public Integer call() {
    new CommandLine(this).usage(out);
    return OK;
  }

  /** A failure with its exit code and a one-line message. */
  static final class ServeFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int exitCode;

    ServeFailure(int exitCode, String message, Throwable cause) {
      super(message, cause);
      this.exitCode = exitCode;
    }

    int exitCode() {
      return exitCode;
    }
  }
}
