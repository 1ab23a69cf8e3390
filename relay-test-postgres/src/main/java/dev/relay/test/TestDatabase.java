package dev.relay.test;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The database of one test: a PostgreSQL server, a shared connection pool to it, and a schema of
 * the test's own, migrated by Relay's migrator when relay-core is on the class path (otherwise
 * empty).
 *
 * <p>Get it as a parameter of a test method or a {@code @BeforeEach}/{@code @AfterEach} method in a
 * class annotated {@link RelayDatabaseTest}; within one test every parameter is the same instance.
 * Relay's SQL is schema-qualified, so pass {@link #schema()} to Relay; connections do not set
 * {@code search_path}. In SQL given to {@link #execute}, {@link #queryLong} and {@link
 * #queryString}, {@code {schema}} stands for the quoted schema name.
 *
 * <p>Every physical connection the kit opens (the shared pool, {@link #newDataSource}) runs in the
 * session time zone {@code America/St_Johns} (UTC-03:30, with daylight saving time), so that code
 * that silently assumes UTC fails. URLs from {@link #jdbcUrl()} carry no time zone: pgjdbc sends
 * the JVM's default zone.
 *
 * <p>It is not thread-confined: the data source and helpers may be used from several threads. It is
 * valid only during its test: afterwards its schema belongs to another test. It does not roll back
 * what a test did; the kit resets the schema after the test (drops the objects the test created,
 * truncates the prepared tables except {@code schema_version}).
 */
public final class TestDatabase {
  private final Server server;
  private final SchemaPool.Prepared schema;
  private final boolean durable;
  private final List<HikariDataSource> extraPools = new ArrayList<>(); // guarded by itself

  TestDatabase(Server server, SchemaPool.Prepared schema, boolean durable) {
    this.server = server;
    this.schema = schema;
    this.durable = durable;
  }

  /**
   * The shared connection pool of the server (HikariCP, at most 24 connections), shared by all
   * tests on that server. Do not close it. Connections start in autocommit mode.
   *
   * @return the shared data source
   */
  public DataSource dataSource() {
    return server.pool();
  }

  /**
   * This test's schema, unquoted, like {@code relay_tk3x9q2_7}: lower-case letters, digits and
   * underscores, so it needs no quoting in SQL.
   *
   * @return the schema name
   */
  public String schema() {
    return schema.name();
  }

  /**
   * A JDBC URL of the database (not of the schema: it sets no {@code currentSchema} or {@code
   * search_path}), including the user. For the embedded server, for example {@code
   * jdbc:postgresql://127.0.0.1:41234/postgres?user=postgres}.
   *
   * @return the database URL
   */
  public String jdbcUrl() {
    return server.jdbcUrl();
  }

  /**
   * The same database's URL, but through another host and port (a {@link LoopbackProxy}); it
   * disables SSL and GSS encryption, which a proxy that reads the protocol needs.
   *
   * @param host the host to connect to instead, for example {@code 127.0.0.1}
   * @param port the port to connect to instead, for example {@link LoopbackProxy#port()}
   * @return the URL
   */
  public String jdbcUrlVia(String host, int port) {
    return server.jdbcUrlVia(host, port);
  }

  /**
   * The server's host as given in its URL ({@code 127.0.0.1} for the embedded servers).
   *
   * @return the host
   */
  public String host() {
    return server.host();
  }

  /**
   * The server's TCP port.
   *
   * @return the port
   */
  public int port() {
    return server.port();
  }

  /**
   * The database name ({@code postgres} for the embedded servers).
   *
   * @return the database
   */
  public String database() {
    return server.database();
  }

  /**
   * The user the connections log in as ({@code postgres}, a superuser, for the embedded servers).
   *
   * @return the user name
   */
  public String user() {
    return server.user();
  }

  /**
   * Whether the test asked for a durable server with {@link DurableDatabase}. On an embedded server
   * this means {@code fsync}, {@code synchronous_commit} and {@code full_page_writes} are on; on an
   * external server ({@code RELAY_TEST_JDBC_URL}) the settings are the server's own.
   *
   * @return true for a {@link DurableDatabase} test
   */
  public boolean durable() {
    return durable;
  }

  /**
   * The server's {@code server_version_num}, for example {@code 180003} for PostgreSQL 18.3.
   *
   * @return the version number
   * @throws SQLException if the server cannot be asked
   */
  public int serverVersionNum() throws SQLException {
    return server.serverVersionNum();
  }

  /**
   * A connection from the shared pool, in autocommit mode. The caller closes it (which returns it
   * to the pool).
   *
   * @return an open connection
   * @throws SQLException if no connection can be had
   */
  public Connection connection() throws SQLException {
    Connection connection = server.pool().getConnection();
    connection.setAutoCommit(true);
    return connection;
  }

  /**
   * A new, separate connection pool to the same database, with the same session time zone and no
   * idle connections kept. Use it to give a component its own pool, for example to exhaust or close
   * it. The kit closes it when the test ends if the test did not.
   *
   * @param poolName the pool's name, shown in HikariCP's log and thread names
   * @param maxPoolSize the maximum number of connections, at least 1
   * @return the new pool
   */
  public HikariDataSource newDataSource(String poolName, int maxPoolSize) {
    HikariConfig config = server.poolConfig(poolName, maxPoolSize, 0);
    HikariDataSource pool = new HikariDataSource(config);
    synchronized (extraPools) {
      extraPools.add(pool);
    }
    return pool;
  }

  /**
   * Runs SQL in autocommit mode on a pooled connection; {@code {schema}} in it is replaced by the
   * quoted schema name. Several statements separated by semicolons are allowed.
   *
   * @param sql the SQL, for example {@code CREATE TABLE {schema}.t (id int)}
   * @throws SQLException if the statement fails
   */
  public void execute(String sql) throws SQLException {
    try (Connection connection = connection();
        Statement statement = connection.createStatement()) {
      statement.execute(withSchema(sql));
    }
  }

  /**
   * Runs a query (with {@code {schema}} replaced) and returns the first column of the first row.
   *
   * @param sql the query, for example {@code SELECT count(*) FROM {schema}.work} (Relay's view of
   *     all work: unfinished work in {@code outbox}, finished work a worker moved to {@code
   *     work_history})
   * @return the value
   * @throws SQLException if the query fails
   * @throws IllegalStateException if the query returns no row or a null value
   */
  public long queryLong(String sql) throws SQLException {
    try (Connection connection = connection();
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(withSchema(sql))) {
      if (!rows.next()) {
        throw new IllegalStateException("Query returned no row: " + sql);
      }
      long value = rows.getLong(1);
      if (rows.wasNull()) {
        throw new IllegalStateException("Query returned null: " + sql);
      }
      return value;
    }
  }

  /**
   * Runs a query (with {@code {schema}} replaced) and returns the first column of the first row as
   * text.
   *
   * @param sql the query, for example {@code SHOW TimeZone}
   * @return the value, or null for SQL NULL
   * @throws SQLException if the query fails
   * @throws IllegalStateException if the query returns no row
   */
  public String queryString(String sql) throws SQLException {
    try (Connection connection = connection();
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(withSchema(sql))) {
      if (!rows.next()) {
        throw new IllegalStateException("Query returned no row: " + sql);
      }
      return rows.getString(1);
    }
  }

  /** Names the server and the schema, for test output. */
  @Override
  public String toString() {
    return "TestDatabase[" + server.name() + ", schema " + schema.name() + "]";
  }

  private String withSchema(String sql) {
    return sql.replace("{schema}", SchemaPool.quote(schema.name()));
  }

  /** Closes the pools the test opened and returns the schema for reuse. */
  void release() {
    List<HikariDataSource> pools;
    synchronized (extraPools) {
      pools = new ArrayList<>(extraPools);
      extraPools.clear();
    }
    try {
      for (HikariDataSource pool : pools) {
        pool.close();
      }
    } finally {
      server.schemas().release(schema);
    }
  }
}
