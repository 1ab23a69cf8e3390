package dev.relay.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.test.EmbeddedServer;
import dev.relay.test.JdbcUrls;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The database every system of one run shares: the server named by a JDBC URL, or an embedded
 * PostgreSQL on 127.0.0.1 started by the durable launcher {@link EmbeddedServer} ({@code fsync},
 * {@code synchronous_commit} and {@code full_page_writes} on).
 */
final class BenchDb implements AutoCloseable {
  private final EmbeddedServer embedded;
  private final String url;
  private final HikariDataSource pool;
  private Connection lockHolder; // holds LOCK_KEY for the run (a session lock: its own connection)

  /**
   * The session advisory lock one run holds on its database for as long as it runs. Every part
   * truncates and claims from tables of fixed names (Relay's schema, the limit's copy, the peers'
   * tables), so a second run on the same database would empty the first one's tables and take its
   * rows: the second is refused before it touches anything.
   */
  static final String LOCK_KEY = "relay-bench";

  /** Another run holds this database: refused before anything is changed. */
  static final class BusyException extends Exception {
    private static final long serialVersionUID = 1L;

    BusyException(String message) {
      super(message);
    }
  }

  /**
   * The database cannot be reached, or the embedded one cannot start: one line, exit 3, as for
   * every relay command ({@link JdbcUrls#describe}).
   */
  static final class UnavailableException extends Exception {
    private static final long serialVersionUID = 1L;

    UnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private BenchDb(EmbeddedServer embedded, String url) {
    this.embedded = embedded;
    this.url = url;
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setPoolName("relay-bench");
    config.setMaximumPoolSize(40);
    config.setMinimumIdle(4);
    config.setConnectionTimeout(Duration.ofSeconds(60).toMillis());
    this.pool = new HikariDataSource(config);
  }

  /**
   * Connects to {@code jdbcUrl} (checked by {@link BenchCommand#checkedUrl}), or starts an embedded
   * server when it is null.
   *
   * @throws UnavailableException if the database cannot be reached or started
   */
  static BenchDb open(String jdbcUrl) throws UnavailableException {
    if (jdbcUrl != null) {
      try (Connection probe = DriverManager.getConnection(JdbcUrls.withTimeouts(jdbcUrl))) {
        probe.isValid(5);
      } catch (SQLException e) {
        throw new UnavailableException(JdbcUrls.describe(e, jdbcUrl), e);
      }
      return new BenchDb(null, jdbcUrl);
    }
    EmbeddedServer pg;
    try {
      pg =
          EmbeddedServer.builder()
              .serverConfig("max_connections", "200")
              .serverConfig("shared_buffers", "256MB")
              .serverConfig("max_wal_size", "4GB")
              .stopOnExit(true)
              .start();
    } catch (IOException | RuntimeException e) {
      throw new UnavailableException("cannot start the embedded PostgreSQL: " + e.getMessage(), e);
    }
    return new BenchDb(pg, pg.jdbcUrl());
  }

  /**
   * Takes the run's advisory lock ({@link #LOCK_KEY}) on a connection of its own, kept until {@link
   * #close}; refuses with {@link BusyException} when another run holds it.
   */
  void lockForRun() throws SQLException, BusyException {
    Connection c = connect();
    boolean taken = false;
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pg_try_advisory_lock(hashtextextended('" + LOCK_KEY + "', 0))")) {
      rs.next();
      taken = rs.getBoolean(1);
    } finally {
      if (!taken) {
        c.close();
      }
    }
    if (!taken) {
      throw new BusyException(
          "another relay bench is running on "
              + JdbcUrls.maskPasswords(url)
              + " (it holds the advisory lock '"
              + LOCK_KEY
              + "'): two runs on one database would truncate and claim each other's rows."
              + " Wait for it to finish, or point --jdbc-url at another database.");
    }
    lockHolder = c;
  }

  HikariDataSource pool() {
    return pool;
  }

  String url() {
    return url;
  }

  boolean embedded() {
    return embedded != null;
  }

  /** A connection outside the pool (for LISTEN, or a transaction held open on purpose). */
  Connection connect() throws SQLException {
    return DriverManager.getConnection(url);
  }

  void exec(String... statements) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }

  long queryLong(String sql) throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Committed transactions of this database so far. Statistics are flushed by each backend at most
   * once a second, so callers wait before reading the end value.
   */
  long xactCommit() throws SQLException {
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (ResultSet rs =
          s.executeQuery(
              "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Waits until the statistics of finished transactions are visible to {@link #xactCommit()}. */
  static void awaitStatsFlush() {
    try {
      Thread.sleep(1_200);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The settings that decide durability and the server version, as the run used them. */
  Map<String, String> settings() throws SQLException {
    Map<String, String> settings = new LinkedHashMap<>();
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync',"
                    + " 'synchronous_commit', 'full_page_writes', 'wal_sync_method',"
                    + " 'shared_buffers', 'max_wal_size', 'autovacuum') ORDER BY name")) {
      while (rs.next()) {
        settings.put(rs.getString(1), rs.getString(2));
      }
    }
    return settings;
  }

  @Override
  public void close() throws IOException {
    pool.close();
    if (lockHolder != null) {
      try {
        lockHolder.close(); // ends the session: its advisory lock goes with it
      } catch (SQLException e) {
        // the server ends the session, and its lock, when the connection is gone anyway
      }
    }
    if (embedded != null) {
      embedded.close();
    }
  }
}
