package dev.relay.app;

import dev.relay.InvalidConfigurationException;
import dev.relay.InvalidWorkException;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.SchemaVersionException;
import dev.relay.Work;
import dev.relay.test.JdbcUrls;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The options every database command shares ({@code --jdbc-url}, {@code --schema}, {@code
 * --verbose}) and its life cycle: validate the schema name, open the database (or the embedded one
 * under {@code ~/.relay}), run, close. Errors become exit codes in {@link RelayCommand}.
 */
abstract class DbCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "JDBC URL of a PostgreSQL 15+ database, like"
              + " jdbc:postgresql://host:5432/db?user=u&password=p. Default: env RELAY_JDBC_URL;"
              + " without either, an embedded PostgreSQL 18 whose data is kept in ~/.relay/pgdata"
              + " (or $RELAY_HOME/pgdata); an empty URL, given or in the variable, is a usage"
              + " error. Unless the URL names connectTimeout and loginTimeout,"
              + " each is 10 s: a database that does not answer is exit 3 after them.")
  String jdbcUrl;

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      defaultValue = "relay",
      description = "Schema holding Relay's tables (default: ${DEFAULT-VALUE}).")
  String schema;

  @Option(
      names = {"-v", "--verbose"},
      description = "Print stack traces of errors.")
  boolean verbose;

  /** Runs the command against the open database; returns the exit code. */
  abstract int run(Database db) throws Exception;

  /**
   * Checks and reads what needs no database (option combinations, the range of every value, input
   * files) before the database is opened, so that a usage error is reported as one even when the
   * database is down or the schema is not migrated.
   */
  void prepare() throws Exception {}

  /**
   * Whether the command needs the database after {@link #prepare()}; false when {@code prepare}
   * already did all of it (printing generated SQL, say), so no database is opened.
   */
  boolean needsDatabase() {
    return true;
  }

  @Override
  public final Integer call() throws Exception {
    try {
      Migrator.forSchema(schema); // validates the name before anything connects
    } catch (InvalidConfigurationException e) {
      throw usage(e.getMessage().replace("invalid setting schema: ", "--schema "));
    }
    String url = jdbcUrl(spec.commandLine(), jdbcUrl);
    prepare();
    if (!needsDatabase()) {
      out().flush();
      return ExitCodes.OK;
    }
    try (Database db =
        Database.openPersistent(url, urlSource(jdbcUrl), dataDirectory(), System.err)) {
      int code = run(db);
      out().flush();
      return code;
    }
  }

  /** Where the embedded server keeps its data: {@code $RELAY_HOME/pgdata} or {@code ~/.relay}. */
  static Path dataDirectory() {
    String home = System.getenv("RELAY_HOME");
    Path base =
        home != null && !home.isBlank()
            ? Path.of(home)
            : Path.of(System.getProperty("user.home"), ".relay");
    return base.resolve("pgdata");
  }

  /**
   * The database URL: {@code given} ({@code --jdbc-url}), else env {@code RELAY_JDBC_URL}, else
   * null (the embedded server). A URL that is not a PostgreSQL JDBC URL is a usage error (exit 2),
   * not an unreachable database. So is an empty or blank one, from the option or the variable:
   * {@code --jdbc-url "$UNSET"} means a database the shell failed to name, and falling back to the
   * embedded one would write there and exit 0. Only a variable that is not set at all selects it. A
   * {@code jdbc:postgresql:} URL that the driver cannot read (a {@code user:password@host} form, a
   * port that is not a number) is a usage error too, its password masked.
   */
  static String jdbcUrl(CommandLine cl, String given) {
    String url = given != null ? given : System.getenv("RELAY_JDBC_URL");
    String source = urlSource(given);
    if (url == null) {
      return null;
    }
    if (url.isBlank()) {
      throw new ParameterException(
          cl,
          source
              + " is empty: give a PostgreSQL JDBC URL like "
              + URL_EXAMPLE
              + (given != null ? ", or leave --jdbc-url out" : ", or unset RELAY_JDBC_URL")
              + " to use the embedded PostgreSQL");
    }
    String problem = JdbcUrls.problem(source, url);
    if (problem != null) {
      throw new ParameterException(cl, problem);
    }
    return url;
  }

  /** How a message names where the URL came from: {@code --jdbc-url}, else the variable. */
  static String urlSource(String given) {
    return given != null ? "--jdbc-url" : "env RELAY_JDBC_URL";
  }

  /** The form of a database URL that usage errors show. */
  static final String URL_EXAMPLE = JdbcUrls.EXAMPLE;

  /** Whether {@code option} was given on the command line (not just its default). */
  boolean given(String option) {
    return spec.commandLine().getParseResult().hasMatchedOption(option);
  }

  /**
   * The summary's note on matching items a filtered run left because of {@code --limit}: {@code
   * selectable} items matched what the run selects (counted before it), {@code taken} it took.
   * Empty when it took fewer than {@code limit} (it selected every one) or none are left.
   */
  static String pastLimit(long selectable, long taken, int limit, boolean capped) {
    long left = taken < limit ? 0 : selectable - taken;
    if (left <= 0) {
      return "";
    }
    return "; "
        + (capped ? "at least " : "")
        + left
        + " more match past --limit "
        + limit
        + ": run again to take them";
  }

  /** A usage error of this command (exit 2): one line naming the option and the expected form. */
  ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /**
   * {@code option}'s duration as typed ({@code 0d}, not {@code 0s}; {@code 99999999999999999999d},
   * not {@link Durations#LONGEST}), or {@code d} when not given, for a refusal to repeat.
   */
  String typed(String option, Duration d) {
    List<String> typed = spec.findOption(option).originalStringValues();
    return typed.isEmpty() ? Durations.format(d) : typed.get(typed.size() - 1);
  }

  /**
   * {@code option}'s duration as a refusal repeats it in the options' units ({@code P36500DT1S} as
   * {@code 36500d1s}); one too long for a {@link Duration} as typed, having no such form.
   */
  String shown(String option, Duration d) {
    return d.equals(Durations.LONGEST) ? typed(option, d) : Durations.format(d);
  }

  /** The documented range of an integer option, both ends included. */
  record Range(long min, long max) {
    /** An int's: the range of an integer option that documents none. */
    static final Range INT = new Range(Integer.MIN_VALUE, Integer.MAX_VALUE);

    /** The refusal of {@code value} (as typed) for {@code option}. */
    String refusal(String option, String value) {
      return option + " must be between " + min + " and " + max + ", was " + value;
    }
  }

  /**
   * The documented ranges of this command's integer options, by option name: the one place each is
   * stated, for {@link #requireRange} and for a value too large for an int ({@link Ints}). An
   * option not named has an int's range.
   */
  Map<String, Range> ranges() {
    return Map.of();
  }

  /** The documented range of {@code option} ({@link #ranges}). */
  Range range(String option) {
    return ranges().getOrDefault(option, Range.INT);
  }

  /** A usage error unless {@code value} of {@code option} is within its {@link #range}. */
  void requireRange(String option, long value) {
    Range r = range(option);
    if (value < r.min() || value > r.max()) {
      throw usage(r.refusal(option, String.valueOf(value)));
    }
  }

  /**
   * A usage error unless {@code value} of {@code option} (an ID, a name, an actor or a reason) has
   * text and at most {@code max} characters: the admin API's own bounds, checked before the
   * database is opened.
   */
  void requireText(String option, String value, int max) {
    if (value == null) {
      return; // not given: picocli reports a missing required option, the command the rest
    }
    if (value.isBlank()) {
      throw usage(option + " is empty");
    }
    if (value.length() > max) {
      throw usage(option + " has " + value.length() + " characters; the limit is " + max);
    }
  }

  /**
   * A usage error unless {@code value} of {@code option}, if given, is a kind or queue name that
   * enqueue takes (core's {@link Outbox#nameProblem}): a filter or a pause of a name no work can
   * have would match nothing, and is answered before the database is opened.
   */
  void requireName(String option, String value) {
    String problem = value == null ? null : Outbox.nameProblem(value);
    if (problem != null) {
      throw usage(option + " " + problem);
    }
  }

  /**
   * A usage error unless {@code value} of {@code option} (a work ID, as {@code show} and {@code
   * cancel} take it), if given, is one enqueue takes: 1-200 characters from {@code A-Z a-z 0-9 . _
   * - : / @ + = #}, by core's own rule ({@link Outbox#validate} of an item carrying it).
   */
  void requireWorkId(String option, String value) {
    if (value != null) {
      requireRule(option, value.isBlank() ? null : Work.of(value, "probe", "{}"), value);
    }
  }

  /** As {@link #requireWorkId}, for an ordering key (the same characters and length). */
  void requireOrderingKey(String option, String value) {
    if (value != null) {
      requireRule(
          option,
          value.isBlank() ? null : Work.of("probe", "probe", "{}").orderingKey(value),
          value);
    }
  }

  /** Core's enqueue rules, for values checked before any work exists (no database). */
  private static final Outbox RULES = Outbox.builder().build();

  /** Refuses {@code probe} (null: a blank value) as core's enqueue would, naming {@code option}. */
  private void requireRule(String option, Work probe, String value) {
    if (probe == null) {
      throw usage(option + " is empty");
    }
    try {
      RULES.validate(probe);
    } catch (InvalidWorkException e) {
      // "invalid work 'probe': orderingKey '...' must be ...": what follows the field's name
      String m = e.getMessage();
      String field = ": " + e.field() + " ";
      int at = m.indexOf(field);
      throw usage(option + " " + (at < 0 ? m : m.substring(at + field.length())));
    }
  }

  /**
   * The roles of Relay's grant catalog this command's database user needs (docs/operations.md,
   * Database roles), by their short names: the operator's, unless a command says otherwise.
   */
  List<String> roles() {
    return List.of("operator");
  }

  /**
   * What a refused statement (SQLState 42501) adds to its message: the roles this command needs,
   * with their names for the schema, as serve's metrics warning names the operator role.
   */
  String permissionHint() {
    List<String> roles = roles();
    return spec.qualifiedName()
        + " needs the "
        + String.join(" and ", roles)
        + (roles.size() == 1 ? " role" : " roles")
        + ": log in as a user in "
        + roles.stream().map(r -> schema + "_" + r).collect(Collectors.joining(" and "))
        + " (relay migrate --roles creates the roles; docs/operations.md, section 18)";
  }

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  PrintWriter err() {
    return spec.commandLine().getErr();
  }

  /**
   * Refuses (exit 1) unless the schema is migrated to this command's version, or to a newer one by
   * expand-only versions (a rolling upgrade), naming the way out.
   */
  void requireCurrentSchema(Database db) throws SQLException {
    int version;
    try (Connection c = db.dataSource().getConnection()) {
      version = Migrator.forSchema(schema).currentVersion(c);
    }
    if (version == 0) {
      throw CommandFailure.refused(
          "schema " + schema + " is not migrated: run `relay migrate --schema " + schema + "`");
    }
    // Older: refused, naming `relay migrate`; newer by expand-only versions (a rolling upgrade):
    // accepted; newer with a contract step this relay predates: refused ("upgrade Relay").
    try (Connection c = db.dataSource().getConnection()) {
      Migrator.forSchema(schema).requireCompatible(c);
    } catch (SchemaVersionException e) {
      throw CommandFailure.refused(e.getMessage());
    }
  }
}
