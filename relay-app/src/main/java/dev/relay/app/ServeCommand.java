package dev.relay.app;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Migrator;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.admin.Admin;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.PurgePolicy;
import dev.relay.micrometer.RelayMetrics;
import dev.relay.schedule.Scheduler;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code relay serve}: workers for the configured kinds, an HTTP endpoint on 127.0.0.1 with {@code
 * /health} and {@code /metrics}, and the maintenance loop, until SIGTERM or Ctrl-C.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Runs workers, /health and /metrics, and the maintenance loop.",
    description = {
      "Runs workers for the kinds named in a JSON config file, an HTTP endpoint on 127.0.0.1 (/health: liveness, database reachable, schema current; /metrics: Prometheus text) and the maintenance loop (retention purge, tombstones, gauge refresh; one process at a time holds it). Runs until SIGTERM or Ctrl-C, then stops claiming, lets running handlers finish within the grace period, and exits.",
      "",
      "Config file (every field but kinds is optional; durations like 30s, 5m, 7d, PT1H):",
      "  {\"queues\": [\"default\"], \"concurrency\": 8, \"lease\": \"60s\",",
      "   \"poll_interval\": \"2s\", \"shutdown_grace\": \"30s\", \"http_port\": 9464,",
      "   \"maintenance_interval\": \"1m\", \"metrics_refresh_interval\": \"15s\",",
      "   \"retention\": {\"work\": \"7d\", \"history\": \"30d\", \"identity\": \"90d\"},",
      "   \"kinds\": {\"order_received\": {\"handler\": \"log\", \"max_attempts\": 8,",
      "     \"backoff_base\": \"1s\", \"backoff_cap\": \"5m\", \"max_elapsed\": \"24h\",",
      "     \"max_run_time\": \"1h\", \"dedup_horizon\": \"24h\",",
      "     \"unknown_outcome\": \"retry\"},",
      "     \"mail\": {\"handler\": \"http\", \"url\": \"http://127.0.0.1:8025/mail\",",
      "       \"receiver_ref_field\": \"email_id\", \"milestone\": \"queued\",",
      "       \"connect_timeout\": \"2s\", \"request_timeout\": \"10s\", \"fencing\": \"generation\"}}}",
      "Handlers: log (logs the work and completes it); http (POSTs the payload to url with",
      "Idempotency-Key = work ID and a fencing token; the reply decides the outcome, see",
      "docs/guide.md). Optional http fields: receiver_ref_header or receiver_ref_field,",
      "milestone (accepted|queued|delivered), connect_timeout, request_timeout,",
      "fencing (generation|none).",
      "Schedules (optional; each due slot becomes one work item, see docs/scheduling.md):",
      "  \"schedules\": {\"nightly-report\": {\"kind\": \"report\", \"cron\": \"30 2 * * *\",",
      "     \"zone\": \"Europe/Berlin\", \"missed\": \"latest\"},",
      "   \"stock-sync\": {\"kind\": \"stock_sync\", \"every\": \"5m\", \"missed\": \"each 1h\"}}",
      ""
    })
final class ServeCommand extends DbCommand {
  /** The default HTTP port. */
  static final int DEFAULT_HTTP_PORT = 9464;

  /** The default interval of the maintenance loop. */
  static final Duration DEFAULT_MAINTENANCE_INTERVAL = Duration.ofMinutes(1);

  private static final Logger log = LoggerFactory.getLogger("relay.serve");

  @Option(
      names = {"-c", "--config"},
      paramLabel = "FILE",
      required = true,
      description = "The JSON config file naming kinds and their policies.")
  Path config;

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      description =
          "Port of the HTTP endpoint on 127.0.0.1 (0: any free port; default: http_port of the"
              + " config, else "
              + DEFAULT_HTTP_PORT
              + ").")
  Integer httpPort;

  @Option(
      names = "--maintenance-interval",
      paramLabel = "DURATION",
      converter = Durations.class,
      description =
          "How often the maintenance loop runs (default: maintenance_interval of the config,"
              + " else 1m).")
  Duration maintenanceInterval;

  @Option(
      names = "--worker-id",
      paramLabel = "ID",
      description = "This worker's ID (default: host, process ID and a random suffix).")
  String workerId;

  @Option(
      names = "--migrate",
      description = "Migrates the schema first (default: refuse to start on an old schema).")
  boolean migrate;

  private ServeConfig settings;

  @Override
  void prepare() throws IOException {
    if (!Files.isRegularFile(config)) {
      throw new ParameterException(spec.commandLine(), "cannot read " + config + ": no such file");
    }
    try {
      settings =
          ServeConfig.parse(Files.readString(config, StandardCharsets.UTF_8), config.toString());
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
    try {
      ServeConfig.within(
          maintenanceInterval,
          "--maintenance-interval",
          Duration.ofSeconds(1),
          Duration.ofHours(24),
          "serve");
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
    if (httpPort != null && (httpPort < 0 || httpPort > 65535)) {
      throw new ParameterException(
          spec.commandLine(), "--http-port must be 0-65535, was " + httpPort);
    }
  }

  @Override
  int run(Database db) throws Exception {
    if (migrate) {
      Migrator.migrate(db.dataSource(), schema);
    } else {
      requireCurrentSchema(db);
    }
    int port =
        httpPort != null
            ? httpPort
            : settings.httpPort() != null ? settings.httpPort() : DEFAULT_HTTP_PORT;
    Duration interval =
        maintenanceInterval != null
            ? maintenanceInterval
            : settings.maintenanceInterval() != null
                ? settings.maintenanceInterval()
                : DEFAULT_MAINTENANCE_INTERVAL;

    CountDownLatch stop = new CountDownLatch(1);
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook =
        new Thread(
            () -> {
              stop.countDown();
              try {
                stopped.await(settings.shutdownGrace().toSeconds() + 30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "relay-serve-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);

    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    try (HikariDataSource pool = pool(db, settings);
        Closer closer = new Closer()) {
      RelayMetrics metrics =
          RelayMetrics.builder(Admin.create(pool, schema))
              .refreshInterval(settings.metricsRefreshInterval())
              .build();
      metrics.bindTo(registry);
      metrics.start();
      closer.add(metrics::close);

      String url = db.url();
      Relay.Builder builder =
          Relay.builder(pool)
              // LISTEN holds its connection for the runtime's life: a connection of its own keeps
              // the pool whole.
              .listenConnections(() -> DriverManager.getConnection(url))
              .listener(metrics.listener())
              .schema(schema)
              .queues(settings.queues().toArray(String[]::new))
              .concurrency(settings.concurrency())
              .lease(settings.lease())
              .pollInterval(settings.pollInterval())
              .shutdownGrace(settings.shutdownGrace());
      if (workerId != null) {
        builder.workerId(workerId);
      }
      List<HttpRoute> routes =
          settings.kinds().values().stream()
              .map(ServeConfig.KindConfig::route)
              .filter(java.util.Objects::nonNull)
              .toList();
      HttpTransport transport =
          routes.isEmpty() ? null : HttpTransport.builder().routes(routes).build();
      for (Map.Entry<String, ServeConfig.KindConfig> e : settings.kinds().entrySet()) {
        builder.handle(
            e.getKey(),
            e.getValue().policy(),
            e.getValue().route() != null ? transport : LogHandler.INSTANCE);
      }
      Relay relay = builder.build();
      relay.start();
      closer.add(relay::close);

      if (!settings.schedules().isEmpty()) {
        // Decides due slots on the pool: it keeps no session state. Closed before the relay.
        Scheduler.Builder schedules = Scheduler.builder(pool).schema(schema);
        settings.schedules().forEach((name, s) -> schedules.schedule(name, s.kind(), s.schedule()));
        Scheduler scheduler = schedules.build();
        scheduler.start();
        closer.add(scheduler::close);
        out().printf("relay serve: schedules %s%n", settings.schedules().keySet());
      }

      PurgePolicy policy = PurgePolicy.DEFAULT;
      if (settings.workRetention() != null) {
        policy = policy.withWorkRetention(settings.workRetention());
      }
      if (settings.historyRetention() != null) {
        policy = policy.withHistoryRetention(settings.historyRetention());
      }
      if (settings.identityHorizon() != null) {
        policy = policy.withIdentityHorizon(settings.identityHorizon());
      }
      // The maintenance lock is a session advisory lock: it lives on a dedicated connection of its
      // own, never on a pooled one.
      Maintenance maintenance =
          Maintenance.create(
              pool,
              () -> DriverManager.getConnection(url),
              new MaintenanceConfig(schema, interval, policy));
      maintenance.start();
      closer.add(maintenance::close);

      HealthEndpoint http =
          HealthEndpoint.start(
              new InetSocketAddress("127.0.0.1", port), pool, schema, relay, registry);
      closer.add(http::close);

      out()
          .printf(
              "relay serve: worker %s, kinds %s, queues %s, schema %s%n"
                  + "relay serve: http://127.0.0.1:%d/health and /metrics; maintenance every %s%n",
              relay.workerId(),
              settings.kinds().keySet(),
              settings.queues(),
              schema,
              http.port(),
              Durations.brief(interval));
      out().flush();
      log.info("serving until SIGTERM or Ctrl-C");
      stop.await();
      log.info(
          "stopping: no new claims; waiting up to {} for running handlers",
          settings.shutdownGrace());
    } finally {
      registry.close();
      stopped.countDown();
    }
    return ExitCodes.OK;
  }

  private static HikariDataSource pool(Database db, ServeConfig settings) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(db.url());
    hc.setPoolName("relay-serve");
    // Handlers do not hold connections; the claimer, lease keeper, completer, LISTEN connection,
    // the maintenance loop and /health each take one briefly.
    hc.setMaximumPoolSize(Math.min(settings.concurrency(), 8) + 6);
    hc.setMinimumIdle(2);
    hc.setConnectionTimeout(10_000);
    return new HikariDataSource(hc);
  }

  /** The built-in {@code log} handler: logs the work and completes it. */
  static final class LogHandler implements Handler {
    static final LogHandler INSTANCE = new LogHandler();

    @Override
    public Outcome handle(Claim claim) {
      log.info(
          "work {} kind {} queue {} attempt {} generation {}: {}",
          claim.workId(),
          claim.kind(),
          claim.queue(),
          claim.attempt(),
          claim.generation(),
          claim.payload());
      return Outcome.done();
    }
  }
}
