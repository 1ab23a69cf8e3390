package dev.relay.test;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.postgresql.Driver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One PostgreSQL server that tests run against: an embedded one started by the kit, or the external
 * one named by {@value #URL_VARIABLE}. Holds the shared connection pool and the schema pool of that
 * server. Servers are started lazily, once per JVM and kind, and stopped by a JVM shutdown hook.
 */
final class Server {
  static final String URL_VARIABLE = "RELAY_TEST_JDBC_URL";
  static final String SESSION_TIME_ZONE = "America/St_Johns";

  private static final Logger LOG = LoggerFactory.getLogger(Server.class);
  private static final int SHARED_POOL_SIZE = 24;
  private static final Object START_LOCK = new Object();
  private static final Map<String, Server> SERVERS = new ConcurrentHashMap<>();
  // Guarded by START_LOCK. A server that failed to start fails every later test at once.
  private static final Map<String, RuntimeException> FAILURES = new ConcurrentHashMap<>();
  private static boolean hookInstalled; // guarded by START_LOCK

  private final String name;
  private final String host;
  private final int port;
  private final String database;
  private final String user;
  private final List<String> urlParameters; // raw "key=value" parts of the URL's query
  private final EmbeddedServer embedded; // null for an external server
  private final HikariDataSource pool;
  private final SchemaPool schemas;
  private volatile int versionNum;

  private Server(
      String name,
      String host,
      int port,
      String database,
      String user,
      List<String> urlParameters,
      EmbeddedServer embedded) {
    this.name = name;
    this.host = host;
    this.port = port;
    this.database = database;
    this.user = user;
    this.urlParameters = List.copyOf(urlParameters);
    this.embedded = embedded;
    this.pool = new HikariDataSource(poolConfig("relay-test-" + name, SHARED_POOL_SIZE, 2));
    this.schemas = new SchemaPool(pool);
  }

  /** The server for a test: the external one if configured, else the (durable) embedded one. */
  static Server get(boolean durable) {
    String url = System.getenv(URL_VARIABLE);
    boolean external = url != null && !url.isBlank();
    String key = external ? "external" : durable ? "durable" : "embedded";
    Server server = SERVERS.get(key);
    if (server != null) {
      return server;
    }
    synchronized (START_LOCK) {
      server = SERVERS.get(key);
      if (server != null) {
        return server;
      }
      RuntimeException failure = FAILURES.get(key);
      if (failure != null) {
        throw new IllegalStateException(
            "The " + key + " PostgreSQL server failed earlier in this JVM", failure);
      }
      try {
        server = external ? external(url.trim()) : startEmbedded(durable, key);
      } catch (RuntimeException e) {
        FAILURES.put(key, e);
        throw e;
      }
      if (!hookInstalled) {
        Runtime.getRuntime().addShutdownHook(new Thread(Server::stopAll, "relay-test-shutdown"));
        hookInstalled = true;
      }
      SERVERS.put(key, server);
      return server;
    }
  }

  private static Server external(String url) {
    Properties parsed = Driver.parseURL(url, null);
    if (parsed == null) {
      throw new IllegalArgumentException(
          URL_VARIABLE + " is not a PostgreSQL JDBC URL (jdbc:postgresql://host:port/db?...)");
    }
    int query = url.indexOf('?');
    List<String> parameters = new ArrayList<>();
    if (query >= 0) {
      for (String part : url.substring(query + 1).split("&")) {
        if (!part.isEmpty()) {
          parameters.add(part);
        }
      }
    }
    String user = parsed.getProperty("user", System.getProperty("user.name"));
    return new Server(
        "external",
        parsed.getProperty("PGHOST").split(",")[0],
        Integer.parseInt(parsed.getProperty("PGPORT").split(",")[0]),
        parsed.getProperty("PGDBNAME"),
        user,
        parameters,
        null);
  }

  private static Server startEmbedded(boolean durable, String name) {
    EmbeddedServer postgres;
    try {
      postgres = EmbeddedServer.builder().durable(durable).start();
    } catch (IOException e) {
      throw new IllegalStateException(
          "Embedded PostgreSQL did not start. As root, zonky runs PostgreSQL through"
              + " 'unshare -U' (util-linux, needs user namespaces). Alternatively set "
              + URL_VARIABLE
              + " to a running server. "
              + e.getMessage(),
          e);
    }
    try {
      return new Server(
          name,
          "127.0.0.1",
          postgres.port(),
          "postgres",
          "postgres",
          List.of("user=postgres"),
          postgres);
    } catch (RuntimeException e) {
      closeQuietly(postgres);
      throw e;
    }
  }

  private static void stopAll() {
    for (Server server : SERVERS.values()) {
      server.stop();
    }
  }

  private void stop() {
    try {
      if (embedded == null) {
        schemas.dropCreatedSchemas();
      }
    } finally {
      pool.close();
      if (embedded != null) {
        closeQuietly(embedded);
      }
    }
  }

  private static void closeQuietly(EmbeddedServer postgres) {
    try {
      postgres.close();
    } catch (IOException | RuntimeException e) {
      LOG.warn("Could not stop embedded PostgreSQL", e);
    }
  }

  /** A pool configuration for this server's database, with the kit's session time zone. */
  HikariConfig poolConfig(String poolName, int maxPoolSize, int minIdle) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    config.setPoolName(poolName);
    config.setMaximumPoolSize(maxPoolSize);
    config.setMinimumIdle(Math.min(minIdle, maxPoolSize));
    config.setConnectionTimeout(Duration.ofSeconds(60).toMillis());
    config.setValidationTimeout(Duration.ofSeconds(10).toMillis());
    config.setIdleTimeout(Duration.ofSeconds(60).toMillis());
    config.setMaxLifetime(Duration.ofMinutes(30).toMillis());
    config.setLeakDetectionThreshold(0);
    // A non-UTC session zone on every physical connection catches time bugs; pgjdbc would
    // otherwise send the JVM's zone, which is often UTC on CI machines.
    config.setConnectionInitSql("SET TIME ZONE '" + SESSION_TIME_ZONE + "'");
    return config;
  }

  String jdbcUrl() {
    return url(host, port, urlParameters);
  }

  String jdbcUrlVia(String viaHost, int viaPort) {
    List<String> parameters = new ArrayList<>();
    for (String parameter : urlParameters) {
      String key = parameter.split("=", 2)[0].toLowerCase(Locale.ROOT);
      if (!key.equals("sslmode") && !key.equals("gssencmode")) {
        parameters.add(parameter);
      }
    }
    // The proxy reads the protocol, so the connection must not be encrypted.
    parameters.add("sslmode=disable");
    parameters.add("gssEncMode=disable");
    return url(viaHost, viaPort, parameters);
  }

  private String url(String urlHost, int urlPort, List<String> parameters) {
    String hostPart =
        urlHost.contains(":") && !urlHost.startsWith("[") ? "[" + urlHost + "]" : urlHost;
    return "jdbc:postgresql://"
        + hostPart
        + ":"
        + urlPort
        + "/"
        + URLEncoder.encode(database, StandardCharsets.UTF_8)
        + (parameters.isEmpty() ? "" : "?" + String.join("&", parameters));
  }

  int serverVersionNum() throws SQLException {
    if (versionNum == 0) {
      try (Connection connection = pool.getConnection();
          Statement statement = connection.createStatement();
          ResultSet rows = statement.executeQuery("SELECT current_setting('server_version_num')")) {
        rows.next();
        versionNum = Integer.parseInt(rows.getString(1));
      }
    }
    return versionNum;
  }

  String name() {
    return name;
  }

  String host() {
    return host;
  }

  int port() {
    return port;
  }

  String database() {
    return database;
  }

  String user() {
    return user;
  }

  boolean embedded() {
    return embedded != null;
  }

  HikariDataSource pool() {
    return pool;
  }

  SchemaPool schemas() {
    return schemas;
  }
}
