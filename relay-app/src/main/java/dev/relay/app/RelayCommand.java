package dev.relay.app;

import static picocli.CommandLine.Model.UsageMessageSpec.SECTION_KEY_COMMAND_LIST;

import dev.relay.InvalidConfigurationException;
import dev.relay.InvalidWorkException;
import dev.relay.Relay;
import dev.relay.RelayException;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.test.JdbcUrls;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Help;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code relay} command: operate a Relay outbox and job queue from a shell. Each subcommand
 * documents its options and the exit codes: 0 ok, 1 refused or not found, 2 usage error, 3 database
 * unavailable. Errors are one line on stderr; {@code --verbose} adds the stack trace.
 *
 * <p>Run it with {@code ./relay} from a clone, or {@code java -jar relay-app-*-all.jar}.
 */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
    description = {
      "Transactional outbox and durable job queue for Java on PostgreSQL.",
      "",
      "Every command that needs a database takes --jdbc-url (or env RELAY_JDBC_URL) and"
          + " --schema (default relay). Without a URL it starts an embedded PostgreSQL 18"
          + " whose data is kept in ~/.relay/pgdata (or $RELAY_HOME/pgdata), and says so on"
          + " stderr. Run `relay help COMMAND` for a command's options.",
      "",
      "`relay serve` (workers, schedules, the console, /actuator/health and /actuator/prometheus)"
          + " and `relay passwd` (a bcrypt hash for the console's users) are the Spring Boot"
          + " application of module relay-serve, `relay bench` and `relay faults` are modules"
          + " relay-bench and relay-faults: the ./relay script runs each from its own jar, and"
          + " routes `relay help COMMAND` for them there too.",
      ""
    },
    commandListHeading = "%nCommands:%n",
    subcommands = {
      MigrateCommand.class,
      StatusCommand.class,
      ListCommand.class,
      ShowCommand.class,
      EnqueueCommand.class,
      RedriveCommand.class,
      SupersedeCommand.class,
      CancelCommand.class,
      PauseCommand.class,
      ResumeCommand.class,
      PurgeCommand.class,
      SchedulesCommand.class,
      DemoCommand.class,
      CommandLine.HelpCommand.class
    })
public final class RelayCommand implements Callable<Integer> {
  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the command line and returns its exit code. */
  public static int run(String... args) {
    return newCommandLine().execute(args);
  }

  /**
   * The commands the {@code relay} script runs from their own modules' jars, and what each does.
   * Their options are their own: {@code relay help COMMAND} is routed to them by the script.
   */
  static final Map<String, String> ROUTED =
      Map.of(
          "serve", "Runs workers, schedules, the console and Actuator (module relay-serve).",
          "passwd", "Prints a bcrypt hash for serve's console users (module relay-serve).",
          "bench", "Benchmarks Relay against the PostgreSQL limit and peers (relay-bench).",
          "faults", "Runs the fault-injection suite (module relay-faults).");

  /** The configured command line: exit codes in every help page, errors mapped to exit codes. */
  static CommandLine newCommandLine() {
    JdbcUrls.silenceDriverLog(); // its lines quote a URL's password; relay's own lines mask it
    CommandLine cl = new CommandLine(new RelayCommand());
    cl.registerConverter(Instant.class, new Instants());
    cl.registerConverter(Integer.class, new Ints());
    cl.registerConverter(Integer.TYPE, new Ints());
    cl.setExecutionExceptionHandler(RelayCommand::handle);
    cl.setParameterExceptionHandler(
        (ex, args) -> usageError(ex.getCommandLine(), unknownFirst(ex)));
    cl.getHelpSectionMap().put(SECTION_KEY_COMMAND_LIST, RelayCommand::commandList);
    documentExitCodes(cl);
    shareVersion(cl, new String[] {"relay " + Relay.version()});
    // picocli's help command has no -V: `relay help -V` printed the usage. It prints the version,
    // as `relay -V` and `relay COMMAND -V` do.
    cl.getSubcommands()
        .get("help")
        .getCommandSpec()
        .addOption(
            OptionSpec.builder("-V", "--version")
                .versionHelp(true)
                .description("Print version information and exit.")
                .build());
    return cl;
  }

  /**
   * Gives the command and every subcommand relay's version ({@link Relay#version()}): picocli's
   * {@code -V} of a command without one prints nothing and exits 0.
   */
  private static void shareVersion(CommandLine cl, String[] version) {
    cl.getCommandSpec().version(version);
    for (CommandLine sub : cl.getSubcommands().values()) {
      sub.getCommandSpec().version(version);
      shareVersion(sub, version);
    }
  }

  /** Picocli's list of this jar's commands, and the routed ones after them in the same layout. */
  private static String commandList(Help help) {
    if (help.commandSpec().parent() != null) {
      return help.commandList();
    }
    Map<String, String> all = new LinkedHashMap<>();
    for (Map.Entry<String, Help> e : help.subcommands().entrySet()) {
      CommandSpec sub = e.getValue().commandSpec();
      String[] header = sub.usageMessage().header();
      String[] description = sub.usageMessage().description();
      all.put(
          e.getKey(), header.length > 0 ? header[0] : description.length > 0 ? description[0] : "");
    }
    new TreeMap<>(ROUTED).forEach(all::put);
    return help.createTextTable(all).toString();
  }

  /**
   * Reports a usage error: one line naming the problem, one naming where the command's options are
   * described; returns {@link ExitCodes#USAGE}.
   */
  static int usageError(CommandLine cmd, String message) {
    PrintWriter err = cmd.getErr();
    err.println(cmd.getCommandSpec().qualifiedName() + ": " + Messages.oneLine(message));
    err.println("see " + helpCommand(cmd));
    err.flush();
    return ExitCodes.USAGE;
  }

  /**
   * The message of a parse error, naming an unknown option first: picocli checks required options
   * before it reports what it did not match, and {@code --acter} is better answered by naming it
   * than by "missing --actor".
   */
  static String unknownFirst(ParameterException ex) {
    ParseResult parsed = ex.getCommandLine().getParseResult();
    if (ex instanceof UnmatchedArgumentException u && ex.getCommandLine().getParent() == null) {
      List<String> unmatched = u.getUnmatched();
      if (!unmatched.isEmpty() && !unmatched.get(0).startsWith("-")) {
        return unknownCommand(ex.getCommandLine(), unmatched.get(0));
      }
    }
    // picocli's help command: "Unknown subcommand 'nosuch'." for what `relay nosuch` answers
    if (ex.getCommandLine().getParent() == null
        && ex.getValue() != null
        && ex.getMessage().startsWith("Unknown subcommand '")) {
      return unknownCommand(ex.getCommandLine(), ex.getValue());
    }
    if (ex instanceof UnmatchedArgumentException
        || parsed == null
        || parsed.unmatched().isEmpty()) {
      return outOfRange(ex);
    }
    String arg = parsed.unmatched().get(0);
    return (arg.startsWith("-") ? "Unknown option: '" : "Unmatched argument: '") + arg + "'";
  }

  /**
   * The message of {@code ex}, or for a whole number too large for an int ({@link Ints.OutOfRange})
   * the refusal of its option's documented range, as a value outside it within an int gets.
   */
  private static String outOfRange(ParameterException ex) {
    if (ex.getCause() instanceof Ints.OutOfRange r && ex.getArgSpec() instanceof OptionSpec o) {
      String option = o.longestName();
      return ex.getCommandLine().getCommandSpec().userObject() instanceof DbCommand c
          ? c.range(option).refusal(option, r.value())
          : DbCommand.Range.INT.refusal(option, r.value());
    }
    return ex.getMessage();
  }

  /**
   * The message for {@code relay nosuch} and {@code relay help nosuch}: an unknown command (not
   * picocli's "Unmatched argument at index 0" or "Unknown subcommand"), the likely one for a typo,
   * and the commands.
   */
  private static String unknownCommand(CommandLine relay, String name) {
    if (ROUTED.containsKey(name)) {
      return "relay "
          + name
          + " runs from its own module, not this jar: start it with the ./relay script";
    }
    Set<String> commands = new TreeSet<>(relay.getSubcommands().keySet());
    commands.addAll(ROUTED.keySet());
    // Picocli's own suggestions are loose ("frobnicate": migrate); a typo is a few edits away.
    String likely = null;
    for (String c : commands) {
      if (edits(name, c) <= 2 && (likely == null || edits(name, c) < edits(name, likely))) {
        likely = c;
      }
    }
    return "unknown command '"
        + name
        + "'"
        + (likely == null ? "" : " (did you mean " + likely + "?)")
        + "; the commands are "
        + String.join(", ", commands);
  }

  /** The Levenshtein distance between {@code a} and {@code b}. */
  private static int edits(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }

  /** How to ask for {@code cmd}'s help: {@code relay help status}, {@code relay --help}. */
  private static String helpCommand(CommandLine cmd) {
    CommandLine parent = cmd.getParent();
    if (parent == null) {
      return "relay --help";
    }
    if (parent.getParent() == null) {
      return "relay help " + cmd.getCommandName();
    }
    return cmd.getCommandSpec().qualifiedName() + " --help";
  }

  private static void documentExitCodes(CommandLine cl) {
    cl.getCommandSpec().usageMessage().exitCodeListHeading("%nExit codes:%n");
    cl.getCommandSpec().usageMessage().exitCodeList(ExitCodes.help());
    for (CommandLine sub : cl.getSubcommands().values()) {
      documentExitCodes(sub);
    }
  }

  /** {@code relay} alone: the usage, on stderr, as a usage error (exit 2). */
  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return ExitCodes.USAGE;
  }

  @Spec CommandSpec spec;

  private static int handle(Exception ex, CommandLine cmd, ParseResult parsed) {
    PrintWriter err = cmd.getErr();
    String name = cmd.getCommandSpec().qualifiedName();
    int code;
    String message;
    if (ex instanceof ParameterException) {
      return usageError(cmd, ex.getMessage());
    } else if (ex instanceof CommandFailure f) {
      code = f.exitCode();
      message = f.getMessage();
    } else if (ex instanceof DatabaseUnavailableException) {
      code = ExitCodes.UNAVAILABLE;
      message = "database unavailable: " + ex.getMessage();
    } else if (isConnectionFailure(ex)) {
      code = ExitCodes.UNAVAILABLE;
      message = "database unavailable: " + firstLine(ex);
    } else if (ex instanceof InvalidWorkException
        || ex instanceof InvalidConfigurationException
        || ex instanceof InvalidAdminRequestException
        || ex instanceof IllegalArgumentException) {
      if (verbose(parsed)) {
        ex.printStackTrace(err);
      }
      return usageError(cmd, inFlags(cmd, parsed, ex));
    } else if (ex instanceof RelayException) {
      code = ExitCodes.REFUSED;
      message = ex.getMessage();
    } else {
      code = ExitCodes.REFUSED;
      message = firstLine(ex);
    }
    if (hasSqlState(ex, "42501") && cmd.getCommandSpec().userObject() instanceof DbCommand c) {
      // permission denied: say which role the command needs, not only which table it could not
      // read; a refusal that already names the way out (Migrator's grants) is left as it is
      String hint = c.permissionHint();
      if (!message.contains("relay migrate --roles")) {
        message = message + "; " + hint;
      }
    }
    err.println(name + ": " + Messages.oneLine(message));
    if (verbose(parsed)) {
      ex.printStackTrace(err);
    }
    err.flush();
    return code;
  }

  /** Library names of values whose option is not simply their kebab-case form. */
  private static final Map<String, String> FLAGS =
      Map.of(
          "workRetention",
          "--retention",
          "cursor",
          "--after",
          "workId",
          "--id",
          "filter.state",
          "--state",
          "filter.outcome",
          "--outcome",
          "filter.blockedReason",
          "--blocked-reason",
          "resumeAt",
          "--until");

  /**
   * The library's refusal in the command's terms: the API name of the value (a setting, a request
   * field, a work field) replaced by the option that gave it, when the command has that option and
   * the value came from it (not from an {@code enqueue --file} item, whose fields keep their
   * names).
   */
  private static String inFlags(CommandLine cmd, ParseResult parsed, Exception ex) {
    String m = ex.getMessage();
    String name;
    if (ex instanceof InvalidConfigurationException e) {
      name = e.setting();
      m = m.replace("invalid setting " + name + ": ", name + " ");
    } else if (ex instanceof InvalidAdminRequestException e) {
      name = e.field();
      m = m.replace("invalid admin request: ", "");
    } else if (ex instanceof InvalidWorkException e && !matched(parsed, "--file")) {
      name = e.field();
    } else {
      return m;
    }
    String flag =
        FLAGS.getOrDefault(
            name, "--" + name.replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT));
    if (ex instanceof InvalidWorkException) {
      flag = workOption(cmd, parsed, name, flag);
      if (cmd.getCommandSpec().findOption("--available-at") != null) {
        m = m.replace(" after availableAt ", " after --available-at "); // the deadline's refusal
      }
    }
    if (cmd.getCommandSpec().findOption(flag) == null) {
      if (!name.equals("workId") || cmd.getCommandSpec().positionalParameters().isEmpty()) {
        return m;
      }
      flag = cmd.getCommandSpec().positionalParameters().get(0).paramLabel(); // show ID, ...
    }
    return m.replaceFirst(
            "(^|: )" + Pattern.quote(name) + " ", "$1" + Matcher.quoteReplacement(flag) + " ")
        .replace("(pass null for the first page)", "(leave --after out for the first page)");
  }

  /**
   * The option that gave a work item's {@code field}, where it is not {@code flag}: the ID of
   * supersede's replacement is {@code --new-id}, and a payload read from a file {@code
   * --payload-file}.
   */
  private static String workOption(CommandLine cmd, ParseResult parsed, String field, String flag) {
    if (field.equals("workId") && cmd.getCommandSpec().findOption(flag) == null) {
      return "--new-id";
    }
    if (field.equals("payload") && matched(parsed, "--payload-file")) {
      return "--payload-file";
    }
    return flag;
  }

  private static boolean matched(ParseResult parsed, String option) {
    for (ParseResult p = parsed; p != null; p = p.subcommand()) {
      if (p.hasMatchedOption(option)) {
        return true;
      }
    }
    return false;
  }

  private static boolean verbose(ParseResult parsed) {
    return matched(parsed, "--verbose");
  }

  /** Whether {@code ex} (or a cause) says the database cannot be reached. */
  static boolean isConnectionFailure(Throwable ex) {
    for (Throwable t = ex; t != null; t = t.getCause()) {
      String state = sqlState(t);
      if (state != null && (state.startsWith("08") || state.equals("57P01"))) {
        return true;
      }
      if (t instanceof ConnectException) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  /** Whether {@code ex} or a cause carries {@code state}. */
  private static boolean hasSqlState(Throwable ex, String state) {
    for (Throwable t = ex; t != null; t = t.getCause()) {
      if (state.equals(sqlState(t))) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  private static String sqlState(Throwable t) {
    if (t instanceof SQLException s) {
      return s.getSQLState();
    }
    return t instanceof RelayException r ? r.sqlState() : null;
  }

  private static String firstLine(Throwable ex) {
    Throwable t = ex;
    while (t.getMessage() == null && t.getCause() != null) {
      t = t.getCause();
    }
    String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    int newline = m.indexOf('\n');
    return newline < 0 ? m : m.substring(0, newline);
  }
}
