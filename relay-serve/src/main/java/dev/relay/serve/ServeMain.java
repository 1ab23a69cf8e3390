package dev.relay.serve;

import dev.relay.Relay;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The entry point of {@code relay serve} and {@code relay passwd} (the {@code relay} script routes
 * both here, and {@code relay help serve|passwd} too). Exit codes: 0 ok, 1 refused (an old schema),
 * 2 usage or config error, 3 database unavailable. A started {@code serve} keeps running after
 * {@link #run} returns, until SIGTERM (or Ctrl-C): it then stops cleanly and exits 0, so that a
 * service manager sees a requested stop as a success.
 */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
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
    stopOnSignals(main.serving, System.out);
  }

  /**
   * Answers SIGTERM and SIGINT by closing {@code serving} (workers finish within the grace, then
   * the database) and exiting 0, or 1 if the close failed. Left to itself the JVM runs the shutdown
   * hooks and then exits 143 (128 + SIGTERM) however cleanly they stopped. {@code sun.misc.Signal}
   * (module jdk.unsupported, in every JDK) is reached by reflection because javac's warning on a
   * proprietary API cannot be suppressed and the build treats warnings as errors. Where it is
   * missing, the shutdown hook still stops {@code serving}, with the JVM's exit status.
   */
  static void stopOnSignals(Serving serving, PrintStream out) {
    Runnable stop =
        () -> {
          int status = OK;
          try {
            serving.close();
            out.println("relay serve: stopped");
          } catch (RuntimeException e) {
            e.printStackTrace();
            status = REFUSED;
          }
          out.flush();
          System.exit(status);
        };
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handlerType = Class.forName("sun.misc.SignalHandler");
      Object handler =
          Proxy.newProxyInstance(
              handlerType.getClassLoader(),
              new Class<?>[] {handlerType},
              (proxy, method, args) ->
                  switch (method.getName()) {
                    case "handle" -> {
                      stop.run();
                      yield null;
                    }
                    case "equals" -> proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "relay serve stop";
                  });
      Method handle = signal.getMethod("handle", signal, handlerType);
      for (String name : new String[] {"TERM", "INT"}) {
        handle.invoke(null, signal.getConstructor(String.class).newInstance(name), handler);
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      // No sun.misc.Signal here (or the JVM reserves the signal, as with -Xrs): the shutdown hook
      // still stops serve, and the exit status is the JVM's.
    }
  }

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** The running {@code serve}, once started. */
  Serving serving;

  /** Runs {@code args}, reporting errors on {@code err}; returns the exit code. */
  int run(PrintStream err, String... args) {
    CommandLine cl = new CommandLine(this);
    // as relay-app's RelayCommand; picocli's -V of a subcommand without a version prints nothing
    // and exits 0, so each has it too
    String version = "relay " + Relay.version();
    cl.getCommandSpec().version(version);
    for (CommandLine sub : cl.getSubcommands().values()) {
      sub.getCommandSpec().version(version);
    }
    cl.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
    cl.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
    cl.setParameterExceptionHandler((ex, a) -> usageError(ex.getCommandLine(), unknownFirst(ex)));
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          if (ex instanceof ServeFailure f && f.exitCode() == USAGE) {
            return usageError(cmd, f.getMessage());
          }
          if (ex instanceof ServeFailure f) {
            cmd.getErr()
                .println(
                    "relay "
                        + cmd.getCommandName()
                        + ": "
                        + PrintConfig.maskPasswords(f.getMessage()));
            return f.exitCode();
          }
          throw ex;
        });
    return cl.execute(args);
  }

  /**
   * The message of a parse error, naming an unknown option first (picocli checks required options
   * before it reports what it did not match).
   */
  private static String unknownFirst(CommandLine.ParameterException ex) {
    CommandLine.ParseResult parsed = ex.getCommandLine().getParseResult();
    if (ex instanceof CommandLine.UnmatchedArgumentException
        || parsed == null
        || parsed.unmatched().isEmpty()) {
      return ex.getMessage();
    }
    String arg = parsed.unmatched().get(0);
    return (arg.startsWith("-") ? "Unknown option: '" : "Unmatched argument: '") + arg + "'";
  }

  /**
   * A usage error: one line naming the problem, one naming the command's help; exit code 2. Only
   * the first line of a message is printed (the config parser's messages are one line already).
   * Like every message of serve, it shows no URL's password.
   */
  private static int usageError(CommandLine cmd, String message) {
    String name = cmd.getParent() == null ? "relay" : "relay " + cmd.getCommandName();
    String first = PrintConfig.maskPasswords(message.strip().replaceAll("\\s*\\R\\s*", "; "));
    cmd.getErr().println(name + ": " + first);
    cmd.getErr()
        .println(
            cmd.getParent() == null
                ? "see relay --help"
                : "see relay help " + cmd.getCommandName());
    return USAGE;
  }

  InputStream in() {
    return in;
  }

  PrintStream out() {
    return out;
  }

  /** No command: the usage, on stderr, as a usage error (exit 2). */
  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return USAGE;
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
