package dev.relay.spring.autoconfigure;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.ConnectionFactory;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime's connections: a small pool of its own (HikariCP, {@code relay.pool-size}) and a
 * dedicated LISTEN connection, both opened with the application DataSource's URL and credentials,
 * so request load on the application's pool cannot starve lease renewals and completions. Behind a
 * transaction-pooling PgBouncer, {@code relay.direct-connection.url} points the session connections
 * (LISTEN, the maintenance lock) at PostgreSQL itself.
 *
 * <p>The URL and credentials are read from the application's DataSource when it is (or wraps) a
 * {@link HikariDataSource} configured with a JDBC URL, Boot's default, or else from {@code
 * spring.datasource.*}. When neither gives a URL (a JNDI or otherwise opaque DataSource) the
 * runtime uses the application's DataSource itself: its pool then also serves claims and renewals
 * and holds one connection for LISTEN, so size it for that. {@link #shared()} tells which.
 */
public final class RelayConnections implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RelayConnections.class);

  private final DataSource dataSource;
  private final ConnectionFactory listen;
  private final HikariDataSource ownPool;

  private RelayConnections(DataSource dataSource, ConnectionFactory listen, HikariDataSource own) {
    this.dataSource = dataSource;
    this.listen = listen;
    this.ownPool = own;
  }

  /** Where the URL and credentials come from. */
  record Target(String url, String user, String password, Properties properties, String initSql) {}

  static RelayConnections open(DataSource application, Target target, int poolSize) {
    return open(application, target, poolSize, null);
  }

  /**
   * @param direct where the session connections (LISTEN, the maintenance lock) go when the
   *     DataSource's URL is a pooler's; null: the DataSource's URL
   */
  static RelayConnections open(DataSource application, Target target, int poolSize, Target direct) {
    if (target == null || target.url() == null) {
      if (direct != null) {
        log.warn(
            "Relay cannot read a JDBC URL from the application's DataSource; the runtime shares"
                + " that pool (its LISTEN connection comes from relay.direct-connection.url)");
        return new RelayConnections(application, sessions(direct), null);
      }
      log.warn(
          "Relay cannot read a JDBC URL from the application's DataSource; the runtime shares"
              + " that pool (and holds one of its connections for LISTEN)");
      return new RelayConnections(application, application::getConnection, null);
    }
    HikariConfig config = new HikariConfig();
    config.setPoolName("relay");
    config.setJdbcUrl(target.url());
    config.setUsername(target.user());
    config.setPassword(target.password());
    if (target.properties() != null) {
      config.setDataSourceProperties(target.properties());
    }
    if (target.initSql() != null) {
      config.setConnectionInitSql(target.initSql());
    }
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
    config.setInitializationFailTimeout(-1); // start even when the database is down for a moment
    HikariDataSource pool = new HikariDataSource(config);
    return new RelayConnections(pool, sessions(direct != null ? direct : target), pool);
  }

  /** Opens a connection of its own (never pooled) to {@code target} for each call. */
  private static ConnectionFactory sessions(Target target) {
    Properties login = new Properties();
    if (target.properties() != null) {
      login.putAll(target.properties());
    }
    if (target.user() != null) {
      login.setProperty("user", target.user());
    }
    if (target.password() != null) {
      login.setProperty("password", target.password());
    }
    return () -> {
      var c = DriverManager.getConnection(target.url(), login);
      if (target.initSql() != null) {
        try (var s = c.createStatement()) {
          s.execute(target.initSql());
        } catch (SQLException e) {
          c.close();
          throw e;
        }
      }
      return c;
    };
  }

  /** The DataSource the runtime, the migrator, health and metrics use. */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * How the runtime opens its LISTEN connection and maintenance its lock connection: sessions of
   * their own, on {@code relay.direct-connection.url} when set.
   */
  public ConnectionFactory listenConnections() {
    return listen;
  }

  /** True when the runtime uses the application's DataSource instead of a pool of its own. */
  public boolean shared() {
    return ownPool == null;
  }

  /** Closes the runtime's own pool (never the application's DataSource). */
  @Override
  public void close() {
    if (ownPool != null) {
      ownPool.close();
    }
  }
}
