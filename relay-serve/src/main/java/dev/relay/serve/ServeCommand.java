package dev.relay.serve;

import dev.relay.Migrator;
import dev.relay.SchemaVersionException;
import dev.relay.spring.autoconfigure.RelayProperties;
import dev.relay.test.EmbeddedServer;
import dev.relay.test.JdbcUrls;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Stack;
import java.util.concurrent.Callable;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.origin.OriginTrackedValue;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import picocli.CommandLine.Command;
import picocli.CommandLine.IParameterConsumer;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code relay serve}: reads and checks the configuration ({@link ServeConfig}), checks the
 * database, and starts {@link ServeApplication}. A bad setting is exit code 2 naming the property,
 * before anything starts or connects; {@code --print-config} prints the settings and exits.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Runs workers, schedules, the console, /actuator/health and /actuator/prometheus.",
    description = {
      "Runs the workers for the kinds of a configuration file, its schedules, the maintenance"
          + " loop, the console (form login for the configured users) and /actuator/health and"
          + " /actuator/prometheus, on 127.0.0.1:9464 unless server.address and server.port say"
          + " otherwise. The file is an application.yml or .properties with the Spring Boot"
          + " starter's relay.* properties (a JSON file of earlier releases is still read, with a"
          + " warning naming the properties to use). Runs until SIGTERM or Ctrl-C, then stops"
          + " claiming, lets running handlers finish within relay.shutdown-grace, and exits. The"
          + " settings are described in docs/operations.md.",
      ""
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      " 0:help, --version or --print-config; or, once serving, a clean stop after SIGTERM or"
          + " Ctrl-C",
      " 1:refused: the schema is not migrated (see --migrate), has an edited migration or is newer"
          + " than this relay; or it cannot start (the port is in use, ...); or the stop failed",
      " 2:usage or config error: an unknown or missing option, a bad value or setting, a database"
          + " URL that is not jdbc:postgresql:...",
      " 3:database unavailable: it cannot be reached, or the embedded PostgreSQL cannot start"
    })
final class ServeCommand implements Callable<Integer> {
  @ParentCommand ServeMain main;

  @Spec CommandSpec spec;

  @Option(
      names = {"-c", "--config"},
      paramLabel = "FILE",
      required = true,
      description =
          "The configuration: application.yml or .properties with relay.* (kinds, schedules,"
              + " console users), server.*, spring.datasource.*; or a JSON file of earlier"
              + " releases.")
  Path config;

  @Option(
      names = "--print-config",
      description =
          "Prints the effective settings as properties (secrets masked) and exits, starting"
              + " nothing.")
  boolean printConfig;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "JDBC URL of a PostgreSQL 15+ database, like jdbc:postgresql://host:5432/db?user=u"
              + " (another form is a usage error). Default: env RELAY_JDBC_URL, else"
              + " spring.datasource.url of the file; without any, an embedded PostgreSQL 18 whose"
              + " data is kept in ~/.relay/pgdata (or $RELAY_HOME/pgdata), and whose URL serve"
              + " prints at start.")
  String jdbcUrl;

  @Option(
      names = "--direct-jdbc-url",
      paramLabel = "URL",
      description =
          "JDBC URL of PostgreSQL itself for the LISTEN connection and the maintenance lock, when"
              + " --jdbc-url goes through PgBouncer in transaction pooling mode (the starter's"
              + " relay.direct-connection.url). Default: env RELAY_DIRECT_JDBC_URL; without"
              + " either, --jdbc-url serves both.")
  String directJdbcUrl;

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      description = "Schema holding Relay's tables (relay.schema; default: relay).")
  String schema;

  @Option(
      names = {"--port", "--http-port"},
      paramLabel = "PORT",
      parameterConsumer = PortValue.class,
      description = "Port to listen on (server.port; 0: any free port; default 9464).")
  Integer port;

  /**
   * Reads {@code --port}'s value. Picocli's own errors name an option by its longest name, here
   * {@code --http-port} (kept from earlier releases), not {@code --port}, the name the docs teach.
   */
  static final class PortValue implements IParameterConsumer {
    @Override
    public void consumeParameters(Stack<String> args, ArgSpec option, CommandSpec command) {
      if (args.isEmpty()) {
        throw new MissingParameterException(
            command.commandLine(), option, "Missing required parameter for option '--port' (PORT)");
      }
      String value = args.pop();
      try {
        option.setValue(Integer.valueOf(value.strip()));
      } catch (NumberFormatException e) {
        throw new ParameterException(
            command.commandLine(),
            "Invalid value for option '--port': '" + value + "' is not an int");
      }
    }
  }

  @Option(
      names = "--maintenance-interval",
      paramLabel = "DURATION",
      description = "How often the maintenance loop runs (relay.maintenance.interval; default 1m).")
  String maintenanceInterval;

  @Option(
      names = "--worker-id",
      paramLabel = "ID",
      description = "This worker's ID (relay.worker-id; default: host, process ID and a suffix).")
  String workerId;

  @Option(
      names = "--migrate",
      description =
          "Migrates the schema first (relay.migrate; default: refuse to start on an old schema).")
  boolean migrate;

  /**
   * The class-data-sharing training run of the {@code relay} script: starts the application context
   * of the file (every bean, as lazy initialisation would leave some classes unloaded) against no
   * database, and exits once it is refreshed, before anything starts, so that {@code
   * -XX:ArchiveClassesAtExit} archives the classes a real start loads.
   */
  @Option(names = "--training-run", hidden = true)
  boolean trainingRun;

  @Override
  public Integer call() {
    if (port != null && (port < 0 || port > 65535)) {
      throw usage("--port must be 0-65535, was " + port, null);
    }
    ServeConfig settings;
    try {
      settings = ServeConfig.load(config, commandLine());
    } catch (ServeConfig.Refused e) {
      throw usage(e.getMessage(), e);
    }
    warnAboutJson(settings);
    warn(settings);
    if (printConfig) {
      PrintWriter out = spec.commandLine().getOut();
      out.println("# relay serve --print-config: the settings of " + config + " (secrets masked)");
      PrintConfig.lines(settings).forEach(out::println);
      out.flush();
      return ServeMain.OK;
    }
    StandardEnvironment env = settings.environment();
    RelayProperties relay = settings.relay();
    if (trainingRun) {
      env.getPropertySources()
          .addFirst(new MapPropertySource("relay serve training run", training()));
      // Read by Spring's lifecycle processor from the system properties, not the environment.
      System.setProperty("spring.context.exit", "onRefresh");
      start(settings);
      return ServeMain.OK; // not reached: Spring exits once the context is refreshed
    }
    EmbeddedServer embedded = null;
    if (env.getProperty("spring.datasource.url", "").isBlank()) {
      embedded = embedded();
      env.getPropertySources()
          .addFirst(
              new MapPropertySource(
                  "relay serve embedded database",
                  Map.of("spring.datasource.url", embedded.jdbcUrl())));
    }
    try {
      prepareSchema(settings);
      // The schema is at this relay's version now: the starter need not look again.
      env.getPropertySources()
          .addFirst(new MapPropertySource("relay serve schema prepared", fixed()));
      ConfigurableApplicationContext context = start(settings);
      main.serving = new Serving(context, embedded);
      Runtime.getRuntime().addShutdownHook(new Thread(main.serving::close, "relay-serve-stop"));
      String base =
          "http://"
              + settings.bind()
              + ":"
              + context.getEnvironment().getProperty("local.server.port");
      main.out()
          .printf(
              "relay serve: kinds %s, queues %s, schema %s%s%n"
                  + "relay serve: %s/actuator/health and /actuator/prometheus%s%n",
              settings.kinds(),
              relay.getQueues(),
              relay.getSchema(),
              settings.schedules().getSchedules().isEmpty()
                  ? ""
                  : ", schedules " + settings.schedules().getSchedules().keySet(),
              base,
              settings.consoleEnabled() ? "; console " + base + settings.console().getPath() : "");
      if (embedded != null) {
        // Its port is new at every start: say where other tools (psql, relay) reach it meanwhile.
        main.out()
            .printf(
                "relay serve: embedded PostgreSQL at %s while serve runs%n", embeddedUrl(embedded));
      }
      main.out().flush();
      return ServeMain.OK;
    } catch (RuntimeException e) {
      if (embedded != null) {
        closeQuietly(embedded);
      }
      throw e;
    }
  }

  /** The options given, as the properties they set, each with the option as its origin. */
  private Map<String, Object> commandLine() {
    Map<String, Object> p = new LinkedHashMap<>();
    put(p, "relay.schema", schema, "--schema");
    put(p, "relay.worker-id", workerId, "--worker-id");
    put(p, "relay.maintenance.interval", maintenanceInterval, "--maintenance-interval");
    put(p, "server.port", port == null ? null : String.valueOf(port), "--port");
    if (migrate) {
      put(p, "relay.migrate", "true", "--migrate");
    }
    String env = System.getenv("RELAY_JDBC_URL");
    if (jdbcUrl != null) {
      put(p, "spring.datasource.url", nonEmpty(jdbcUrl, "--jdbc-url"), "--jdbc-url");
    } else if (env != null) {
      put(p, "spring.datasource.url", nonEmpty(env, "env RELAY_JDBC_URL"), "RELAY_JDBC_URL");
    }
    String directEnv = System.getenv("RELAY_DIRECT_JDBC_URL");
    if (directJdbcUrl != null) {
      put(
          p,
          "relay.direct-connection.url",
          nonEmpty(directJdbcUrl, "--direct-jdbc-url"),
          "--direct-jdbc-url");
    } else if (directEnv != null) {
      put(
          p,
          "relay.direct-connection.url",
          nonEmpty(directEnv, "env RELAY_DIRECT_JDBC_URL"),
          "RELAY_DIRECT_JDBC_URL");
    }
    return p;
  }

  /**
   * {@code url}, refused when empty or blank, as the {@code relay} commands refuse it: {@code
   * --jdbc-url "$UNSET"} names a database the shell failed to name, and falling back to the
   * embedded one would serve another database. Only a variable not set at all is no URL.
   */
  private static String nonEmpty(String url, String source) {
    if (url.isBlank()) {
      throw usage(
          source
              + " is empty: give a PostgreSQL JDBC URL like"
              + " jdbc:postgresql://host:5432/db?user=u&password=p, or leave it out (unset) to"
              + " use the embedded PostgreSQL",
          null);
    }
    return url;
  }

  private static void put(Map<String, Object> p, String property, String value, String option) {
    if (value != null) {
      p.put(property, OriginTrackedValue.of(value, new ServeConfig.Given(option)));
    }
  }

  /**
   * What serve sets whatever the file says: the schema is prepared already, and no {@code
   * application.yml} of the working directory is read behind the file given.
   */
  private static Map<String, Object> fixed() {
    return Map.of(
        "relay.migrate", "false",
        "spring.config.location", "optional:classpath:/dev/relay/serve/no-other-config/");
  }

  private static Map<String, Object> training() {
    return Map.of(
        "spring.main.lazy-initialization", "false",
        "spring.datasource.url", "jdbc:postgresql://127.0.0.1:1/relay-serve-training-run",
        "relay.migrate", "false",
        "server.port", "0",
        "logging.level.root", "error",
        "spring.config.location", "optional:classpath:/dev/relay/serve/no-other-config/");
  }

  /** The configuration's warnings, on stderr, at start and with --print-config alike. */
  private void warn(ServeConfig settings) {
    PrintWriter err = spec.commandLine().getErr();
    settings.warnings().forEach(w -> err.println("relay serve: warning: " + config + ": " + w));
    err.flush();
  }

  private void warnAboutJson(ServeConfig settings) {
    if (settings.jsonEquivalents().isEmpty()) {
      return;
    }
    PrintWriter err = spec.commandLine().getErr();
    err.println(
        "relay serve: warning: "
            + config
            + " is a JSON config, read for one more release; write it as an application.yml with"
            + " these properties (--print-config prints them all):");
    settings.jsonEquivalents().forEach(line -> err.println("relay serve: warning:   " + line));
    err.flush();
  }

  /**
   * Migrates with relay.migrate; otherwise refuses a schema that is not migrated or older than this
   * relay's version. A newer schema made of expand-only versions is accepted (a rolling upgrade:
   * the new release migrated while this one still runs); one with a contract step this relay
   * predates is refused.
   */
  private static void prepareSchema(ServeConfig settings) {
    StandardEnvironment env = settings.environment();
    RelayProperties relay = settings.relay();
    String schema = relay.getSchema();
    Properties login = new Properties();
    String user = env.getProperty("spring.datasource.username");
    String password = env.getProperty("spring.datasource.password");
    if (user != null) {
      login.setProperty("user", user);
    }
    if (password != null) {
      login.setProperty("password", password);
    }
    String url = env.getProperty("spring.datasource.url");
    try (Connection c = DriverManager.getConnection(url, login)) {
      if (relay.isMigrate()) {
        Migrator.forSchema(schema).migrate(c);
        return;
      }
      if (Migrator.forSchema(schema).currentVersion(c) == 0) {
        throw new ServeMain.ServeFailure(
            ServeMain.REFUSED,
            "schema "
                + schema
                + " is not migrated: run `relay migrate --schema "
                + schema
                + "` or serve with --migrate",
            null);
      }
      Migrator.forSchema(schema).requireCompatible(c);
    } catch (SchemaVersionException e) {
      // An edited migration, a gap, a newer schema under --migrate: one line, exit 1.
      throw new ServeMain.ServeFailure(ServeMain.REFUSED, e.getMessage(), e);
    } catch (SQLException e) {
      // A value of the URL pgjdbc checks only as it connects, or the server refuses: a usage error
      String refused = JdbcUrls.refusedParameter(settings.urlSource(), url, e);
      if (refused != null) {
        throw usage(refused, e);
      }
      throw new ServeMain.ServeFailure(
          ServeMain.DATABASE_UNAVAILABLE, "database unavailable: " + e.getMessage(), e);
    }
  }

  private ConfigurableApplicationContext start(ServeConfig settings) {
    SpringApplication app = new SpringApplication(ServeApplication.class);
    app.setEnvironment(settings.environment());
    app.setRegisterShutdownHook(false);
    app.addInitializers(
        ctx -> ctx.getBeanFactory().registerSingleton("relayServeConfig", settings));
    if (!settings.consoleEnabled()) {
      org.slf4j.LoggerFactory.getLogger("relay.serve")
          .warn(
              "console NOT mounted: relay.console.enabled=false; give relay.console.users (a"
                  + " bcrypt hash from `relay passwd` and a role, viewer or operator) to serve it");
    }
    try {
      return app.run();
    } catch (RuntimeException e) {
      Throwable root = e;
      for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
        if (t instanceof BindException b) {
          throw usage(config + ": " + ServeConfig.describe(settings.environment(), b), e);
        }
        if (t instanceof InvalidConfigurationPropertyValueException i) {
          throw usage(config + ": " + ServeConfig.describe(settings.environment(), i), e);
        }
        root = t;
      }
      throw new ServeMain.ServeFailure(
          ServeMain.REFUSED, "cannot start: " + root.getMessage() + " (see the log above)", e);
    }
  }

  /** The embedded server's URL for another client: loopback, user and database postgres. */
  static String embeddedUrl(EmbeddedServer embedded) {
    return "jdbc:postgresql://127.0.0.1:" + embedded.port() + "/postgres?user=postgres";
  }

  private EmbeddedServer embedded() {
    String home = System.getenv("RELAY_HOME");
    Path base =
        home != null && !home.isBlank()
            ? Path.of(home)
            : Path.of(System.getProperty("user.home"), ".relay");
    Path dir = base.resolve("pgdata").toAbsolutePath();
    System.err.println(
        "relay: no --jdbc-url, RELAY_JDBC_URL or spring.datasource.url: using an embedded"
            + " PostgreSQL 18 on 127.0.0.1 with its data kept in "
            + dir);
    try {
      return EmbeddedServer.builder().dataDirectory(dir).start();
    } catch (IOException | RuntimeException e) {
      throw new ServeMain.ServeFailure(
          ServeMain.DATABASE_UNAVAILABLE,
          "cannot start the embedded PostgreSQL: " + e.getMessage(),
          e);
    }
  }

  private static ServeMain.ServeFailure usage(String message, Throwable cause) {
    return new ServeMain.ServeFailure(ServeMain.USAGE, message, cause);
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // already failing: the first error is the one to report
    }
  }
}
