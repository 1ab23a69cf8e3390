package dev.relay.serve;

import dev.relay.InvalidConfigurationException;
import dev.relay.Migrator;
import dev.relay.SchemaVersionException;
import dev.relay.test.EmbeddedServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code relay serve}: reads the JSON config, checks the database, and starts {@link
 * ServeApplication} on {@code bind:port}. A bad config is exit code 2 naming the key, before
 * anything connects.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Runs workers, schedules, the console, /actuator/health and /actuator/prometheus.",
    description = {
      "Runs the workers for the kinds named in a JSON config file, its schedules, the maintenance"
          + " loop, the console (form login for the config's users) and /actuator/health and"
          + " /actuator/prometheus, on 127.0.0.1:9464 unless bind and port say otherwise. Runs"
          + " until SIGTERM or Ctrl-C, then stops claiming, lets running handlers finish within"
          + " shutdown_grace, and exits. The config keys are described in docs/operations.md.",
      ""
    })
final class ServeCommand implements Callable<Integer> {
  /** The default interval of the maintenance loop. */
  static final Duration DEFAULT_MAINTENANCE_INTERVAL = Duration.ofMinutes(1);

  @ParentCommand ServeMain main;

  @Option(
      names = {"-c", "--config"},
      paramLabel = "FILE",
      required = true,
      description = "The JSON config file: kinds, schedules, console users, bind, port.")
  Path config;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "JDBC URL of a PostgreSQL 15+ database. Default: env RELAY_JDBC_URL; without either, an"
              + " embedded PostgreSQL 18 whose data is kept in ~/.relay/pgdata (or"
              + " $RELAY_HOME/pgdata).")
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
      defaultValue = "relay",
      description = "Schema holding Relay's tables (default: ${DEFAULT-VALUE}).")
  String schema;

  @Option(
      names = {"--port", "--http-port"},
      paramLabel = "PORT",
      description = "Port to listen on (0: any free port; default: port of the config, else 9464).")
  Integer port;

  @Option(
      names = "--maintenance-interval",
      paramLabel = "DURATION",
      description =
          "How often the maintenance loop runs (default: maintenance_interval of the config,"
              + " else 1m).")
  String maintenanceInterval;

  @Option(
      names = "--worker-id",
      paramLabel = "ID",
      description = "This worker's ID (default: host, process ID and a random suffix).")
  String workerId;

  @Option(
      names = "--migrate",
      description = "Migrates the schema first (default: refuse to start on an old schema).")
  boolean migrate;

  @Override
  public Integer call() {
    ServeConfig settings = read();
    Duration interval = interval(settings);
    if (port != null && (port < 0 || port > 65535)) {
      throw usage("--port must be 0-65535, was " + port, null);
    }
    try {
      Migrator.forSchema(schema);
    } catch (RuntimeException e) {
      throw usage("--schema: " + e.getMessage(), e);
    }
    try {
      ServeApplication.check(settings, new ServeOptions(schema, workerId, interval));
    } catch (InvalidConfigurationException e) {
      throw usage(config + ": " + inConfigTerms(e), e);
    }
    String url = jdbcUrl != null ? jdbcUrl : System.getenv("RELAY_JDBC_URL");
    EmbeddedServer embedded = null;
    if (url == null || url.isBlank()) {
      embedded = embedded();
      url = embedded.jdbcUrl();
    }
    try {
      prepareSchema(url);
      ConfigurableApplicationContext context = start(settings, interval, url);
      main.serving = new Serving(context, embedded);
      Runtime.getRuntime().addShutdownHook(new Thread(main.serving::close, "relay-serve-stop"));
      String address = settings.bind();
      String base =
          "http://" + address + ":" + context.getEnvironment().getProperty("local.server.port");
      main.out()
          .printf(
              "relay serve: kinds %s, queues %s, schema %s%s%n"
                  + "relay serve: %s/actuator/health and /actuator/prometheus%s%n",
              settings.kinds().keySet(),
              settings.queues(),
              schema,
              settings.schedules().isEmpty() ? "" : ", schedules " + settings.schedules().keySet(),
              base,
              settings.users().isEmpty() ? "" : "; console " + base + "/relay");
      main.out().flush();
      return ServeMain.OK;
    } catch (RuntimeException e) {
      if (embedded != null) {
        closeQuietly(embedded);
      }
      throw e;
    }
  }

  private ServeConfig read() {
    if (!Files.isRegularFile(config)) {
      throw usage("cannot read " + config + ": no such file", null);
    }
    try {
      return ServeConfig.parse(Files.readString(config, StandardCharsets.UTF_8), config.toString());
    } catch (IOException e) {
      throw usage("cannot read " + config + ": " + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage(), e);
    }
  }

  private Duration interval(ServeConfig settings) {
    Duration d;
    try {
      d = maintenanceInterval == null ? null : ServeConfig.parseDuration(maintenanceInterval);
      ServeConfig.within(
          d, "--maintenance-interval", Duration.ofSeconds(1), Duration.ofHours(24), "serve");
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage(), e);
    }
    if (d != null) {
      return d;
    }
    return settings.maintenanceInterval() != null
        ? settings.maintenanceInterval()
        : DEFAULT_MAINTENANCE_INTERVAL;
  }

  /**
   * Migrates with --migrate; otherwise refuses a schema that is not migrated or older than this
   * relay's version. A newer schema made of expand-only versions is accepted (a rolling upgrade:
   * the new release migrated while this one still runs); one with a contract step this relay
   * predates is refused.
   */
  private void prepareSchema(String url) {
    try (Connection c = DriverManager.getConnection(url)) {
      if (migrate) {
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
      throw new ServeMain.ServeFailure(
          ServeMain.DATABASE_UNAVAILABLE, "database unavailable: " + e.getMessage(), e);
    }
  }

  private ConfigurableApplicationContext start(
      ServeConfig settings, Duration interval, String url) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("spring.main.banner-mode", "off");
    p.put("spring.datasource.url", url);
    p.put("spring.datasource.hikari.pool-name", "relay-serve-app");
    p.put("spring.datasource.hikari.maximum-pool-size", "2");
    String direct = directJdbcUrl != null ? directJdbcUrl : System.getenv("RELAY_DIRECT_JDBC_URL");
    if (direct != null && !direct.isBlank()) {
      p.put("relay.direct-connection.url", direct);
    }
    p.put("server.address", settings.bind());
    p.put(
        "server.port",
        String.valueOf(
            port != null
                ? port
                : settings.port() != null ? settings.port() : ServeConfig.DEFAULT_PORT));
    p.put("server.shutdown", "graceful");
    // The console's session cookie: SameSite=Lax (a cross-site POST never carries it; a link from
    // an alert still opens the page signed in). Tomcat marks it Secure on a request that came over
    // TLS, also through a TLS-terminating proxy on the same host or network (X-Forwarded-Proto).
    p.put("server.servlet.session.cookie.same-site", "lax");
    p.put("server.forward-headers-strategy", "native");
    p.put("relay.schema", schema);
    p.put("relay.migrate", "false");
    // The claimer, lease keeper, completer, maintenance, schedules, health and console each take
    // one briefly; handlers hold none.
    p.put("relay.pool-size", String.valueOf(Math.min(settings.concurrency(), 8) + 6));
    p.put("relay.metrics-refresh-interval", settings.metricsRefreshInterval().toString());
    p.put("management.endpoints.web.exposure.include", "health,prometheus");
    p.put("management.endpoint.health.show-components", "always");
    if (settings.users().isEmpty()) {
      p.put("relay.console.enabled", "false");
    }
    SpringApplication app = new SpringApplication(ServeApplication.class);
    app.setDefaultProperties(p);
    app.setRegisterShutdownHook(false);
    app.addInitializers(
        ctx -> {
          ctx.getBeanFactory().registerSingleton("relayServeConfig", settings);
          ctx.getBeanFactory()
              .registerSingleton("relayServeOptions", new ServeOptions(schema, workerId, interval));
        });
    if (settings.users().isEmpty()) {
      org.slf4j.LoggerFactory.getLogger("relay.serve")
          .warn(
              "console NOT mounted: the config turns it off (\"console\": {\"enabled\": false});"
                  + " give \"console\": {\"users\": [...]} with a bcrypt hash from `relay passwd`"
                  + " and a role, viewer or operator, to serve it");
    }
    try {
      return app.run();
    } catch (RuntimeException e) {
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      throw new ServeMain.ServeFailure(
          ServeMain.REFUSED, "cannot start: " + root.getMessage() + " (see the log above)", e);
    }
  }

  private EmbeddedServer embedded() {
    String home = System.getenv("RELAY_HOME");
    Path base =
        home != null && !home.isBlank()
            ? Path.of(home)
            : Path.of(System.getProperty("user.home"), ".relay");
    Path dir = base.resolve("pgdata").toAbsolutePath();
    System.err.println(
        "relay: no --jdbc-url or RELAY_JDBC_URL: using an embedded PostgreSQL 18 on 127.0.0.1"
            + " with its data kept in "
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

  /**
   * The builder names settings as the Java API does ({@code kind k: dedupHorizon}); the config
   * spells the same settings in snake case ({@code dedup_horizon}, {@code poll_interval}).
   */
  static String inConfigTerms(InvalidConfigurationException e) {
    String m = e.setting() + ": " + e.problem();
    Matcher camel = CAMEL.matcher(m);
    StringBuilder out = new StringBuilder();
    while (camel.find()) {
      camel.appendReplacement(
          out,
          Matcher.quoteReplacement(
              camel.group().replaceAll("([A-Z])", "_$1").toLowerCase(Locale.ROOT)));
    }
    camel.appendTail(out);
    return out.toString();
  }

  private static final Pattern CAMEL = Pattern.compile("\\b[a-z]+(?:[A-Z][a-z]+)+\\b");

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
