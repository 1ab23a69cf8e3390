package dev.relay.app;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.relay.Migrator;
import dev.relay.Relay;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.sql.DataSource;

/**
 * The HTTP endpoint of {@code relay serve}, on the JDK's own server: {@code /health} (JSON; 200
 * when the process is live, the database answers and the schema is at the version this relay needs,
 * else 503) and {@code /metrics} (Prometheus text). Bind it to 127.0.0.1: it has no authentication.
 */
final class HealthEndpoint implements AutoCloseable {
  private final HttpServer server;
  private final ExecutorService executor;
  private final DataSource dataSource;
  private final String schema;
  private final Relay relay;
  private final PrometheusMeterRegistry registry;

  private HealthEndpoint(
      HttpServer server,
      DataSource dataSource,
      String schema,
      Relay relay,
      PrometheusMeterRegistry registry) {
    this.server = server;
    this.dataSource = dataSource;
    this.schema = schema;
    this.relay = relay;
    this.registry = registry;
    this.executor =
        Executors.newFixedThreadPool(
            2,
            r -> {
              Thread t = new Thread(r, "relay-http");
              t.setDaemon(true);
              return t;
            });
  }

  static HealthEndpoint start(
      InetSocketAddress address,
      DataSource dataSource,
      String schema,
      Relay relay,
      PrometheusMeterRegistry registry)
      throws IOException {
    HttpServer server = HttpServer.create(address, 16);
    HealthEndpoint endpoint = new HealthEndpoint(server, dataSource, schema, relay, registry);
    server.setExecutor(endpoint.executor);
    server.createContext("/health", endpoint::health);
    server.createContext("/metrics", endpoint::metrics);
    server.start();
    return endpoint;
  }

  int port() {
    return server.getAddress().getPort();
  }

  private void health(HttpExchange exchange) throws IOException {
    ObjectNode body = Json.object();
    body.put("live", true);
    ObjectNode database = body.putObject("database");
    ObjectNode schemaNode = body.putObject("schema");
    schemaNode.put("name", schema);
    schemaNode.put("expected_version", Migrator.LATEST_VERSION);
    boolean reachable = false;
    boolean current = false;
    try (Connection c = dataSource.getConnection()) {
      reachable = c.isValid(5);
      int version = Migrator.forSchema(schema).currentVersion(c);
      schemaNode.put("version", version);
      current = version == Migrator.LATEST_VERSION;
    } catch (SQLException | RuntimeException e) {
      database.put(
          "error",
          e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse(""));
    }
    database.put("reachable", reachable);
    schemaNode.put("current", current);
    ObjectNode workers = body.putObject("relay");
    workers.put("running", relay.isRunning());
    workers.put("worker_id", relay.workerId());
    boolean up = reachable && current && relay.isRunning();
    body.put("status", up ? "up" : "down");
    send(exchange, up ? 200 : 503, "application/json", Json.write(body) + "\n");
  }

  private void metrics(HttpExchange exchange) throws IOException {
    send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape());
  }

  private static void send(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    if (exchange.getRequestMethod().equals("HEAD")) {
      exchange.sendResponseHeaders(status, -1);
      exchange.close();
      return;
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
