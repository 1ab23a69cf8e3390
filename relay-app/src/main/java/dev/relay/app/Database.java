package dev.relay.app;

import dev.relay.test.EmbeddedServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.postgresql.Driver;
import org.postgresql.PGProperty;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLState;

/**
 * The database a command runs against: the one named by a JDBC URL, or an embedded PostgreSQL 18 on
 * 127.0.0.1 started by the durable launcher {@link EmbeddedServer} ({@code fsync} and {@code
 * synchronous_commit} on).
 *
 * <p>The embedded server comes in two forms: {@link #open} starts a throwaway one (the demo), and
 * {@link #openPersistent} keeps its data in a directory (by default {@code ~/.relay/pgdata}) so
 * that work enqueued by one {@code relay} command is there for the next. A persistent data
 * directory is locked by the process whose server uses it; while that process runs (a {@code relay
 * serve}, another command), a command on the same directory connects to its server instead of
 * starting one ({@link EmbeddedServer#runningIn}).
 */
final class Database implements AutoCloseable {
  private final EmbeddedServer embedded;
  private final String url;
  private final DataSource dataSource;

  /**
   * Seconds pgjdbc waits to open a TCP connection ({@code connectTimeout}) and for the server to
   * answer the log-in ({@code loginTimeout}), unless the URL names its own: without them pgjdbc
   * waits forever for a server that accepts the connection and never answers.
   */
  static final int TIMEOUT_SECONDS = 10;

  private static final List<String> TIMEOUTS = List.of("connectTimeout", "loginTimeout");

  /**
   * pgjdbc's java.util.logging logger, held so that its level stays set (JUL keeps loggers weakly).
   * Its warnings quote the URL whole, password included ({@code JDBC URL invalid port number:
   * secret@host} for {@code //u:secret@host}), on stderr before relay's own masked line; a URL it
   * cannot read is refused by {@link DbCommand#jdbcUrl} as a usage error instead.
   */
  private static final Logger DRIVER_LOG = Logger.getLogger("org.postgresql");

  /** Silences pgjdbc's own log ({@link #DRIVER_LOG}) in this process: no line of it is relay's. */
  static void silenceDriverLog() {
    DRIVER_LOG.setLevel(Level.OFF);
  }

  /**
   * Whether pgjdbc reads {@code jdbcUrl} (a host, a port number, a database); it returns no
   * connection, not an error, for one it cannot, which {@link DriverManager} reports as "No
   * suitable driver" (an unreachable database to the exit codes).
   */
  static boolean driverReads(String jdbcUrl) {
    return Driver.parseURL(jdbcUrl, null) != null;
  }

  private Database(EmbeddedServer embedded, String url) {
    this.embedded = embedded;
    this.url = url;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(withTimeouts(url));
    this.dataSource = ds;
  }

  /**
   * Connects to {@code jdbcUrl}, or starts a throwaway embedded server when it is {@code null} (an
   * empty URL is refused before, by {@link DbCommand#jdbcUrl}).
   */
  static Database open(String jdbcUrl, PrintStream notes) throws IOException, SQLException {
    if (jdbcUrl != null) {
      return connect(jdbcUrl);
    }
    notes.println("(no --jdbc-url given: starting an embedded PostgreSQL 18 on 127.0.0.1)");
    return start(EmbeddedServer.builder().stopOnExit(true));
  }

  /**
   * Connects to {@code jdbcUrl}, or, when it is {@code null}, starts an embedded server whose data
   * is kept in {@code dataDirectory} (created, and initialised on first use).
   *
   * @throws DatabaseUnavailableException if the database cannot be reached or started
   */
  static Database openPersistent(String jdbcUrl, Path dataDirectory, PrintStream notes) {
    if (jdbcUrl != null) {
      try {
        return connect(jdbcUrl);
      } catch (SQLException e) {
        throw new DatabaseUnavailableException(describe(e, jdbcUrl), e);
      }
    }
    Path dir = dataDirectory.toAbsolutePath();
    Optional<String> running = EmbeddedServer.runningIn(dir);
    if (running.isPresent()) {
      // Another relay process (relay serve, say) runs the server on this directory and holds its
      // lock: use that server while it runs.
      try {
        Database shared = connect(running.get());
        notes.println(
            "relay: no --jdbc-url or RELAY_JDBC_URL: using the embedded PostgreSQL that another"
                + " relay process runs on "
                + dir
                + " ("
                + running.get()
                + ")");
        return shared;
      } catch (SQLException e) {
        // stopping, or not ours after all: try to start it as usual
      }
    }
    notes.println(
        "relay: no --jdbc-url or RELAY_JDBC_URL: using an embedded PostgreSQL 18 on 127.0.0.1"
            + " with its data kept in "
            + dir);
    try {
      return start(EmbeddedServer.builder().dataDirectory(dir).stopOnExit(true));
    } catch (IOException | RuntimeException e) {
      String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      if (why.contains("could not lock")) {
        why =
            "its data directory "
                + dir
                + " is in use by another relay process, whose server is not accepting"
                + " connections (starting or stopping): try again, or name the database with"
                + " --jdbc-url";
      }
      throw new DatabaseUnavailableException("cannot start the embedded PostgreSQL: " + why, e);
    }
  }

  private static Database connect(String jdbcUrl) throws SQLException {
    try (Connection probe = DriverManager.getConnection(withTimeouts(jdbcUrl))) {
      probe.isValid(5);
    }
    return new Database(null, jdbcUrl);
  }

  /**
   * {@code url} with pgjdbc's {@code connectTimeout} and {@code loginTimeout} set to {@link
   * #TIMEOUT_SECONDS} where it does not name them (pgjdbc ignores {@code
   * DriverManager.setLoginTimeout}).
   */
  static String withTimeouts(String url) {
    StringBuilder sb = new StringBuilder(url);
    for (String timeout : TIMEOUTS) {
      if (!Pattern.compile("[?&]" + timeout + "=").matcher(url).find()) {
        sb.append(sb.indexOf("?") < 0 ? '?' : '&').append(timeout).append('=');
        sb.append(TIMEOUT_SECONDS);
      }
    }
    return sb.toString();
  }

  private static Database start(EmbeddedServer.Builder builder) throws IOException {
    EmbeddedServer pg = builder.start();
    return new Database(pg, pg.jdbcUrl());
  }

  /**
   * One line for a driver error on connecting to {@code jdbcUrl}: the cause that pgjdbc's "The
   * connection attempt failed." hides when it is a name that does not resolve, a refused or timed
   * out connection; else the driver's message without its stack of causes.
   */
  static String describe(SQLException e, String jdbcUrl) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof UnknownHostException) {
        String host = t.getMessage() == null ? hosts(jdbcUrl) : t.getMessage();
        return "unknown host " + host.replaceFirst(": .*", "");
      }
      if (t instanceof ConnectException) {
        String why = t.getMessage() == null ? "" : t.getMessage().toLowerCase(Locale.ROOT);
        return (why.contains("refused") ? "connection refused" : "cannot connect (" + why + ")")
            + " at "
            + hosts(jdbcUrl);
      }
      if (t instanceof SocketTimeoutException) {
        return "no TCP connection to "
            + hosts(jdbcUrl)
            + " within the connect timeout (connectTimeout, "
            + TIMEOUT_SECONDS
            + " s unless the URL names it)";
      }
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    if (PSQLState.CONNECTION_UNABLE_TO_CONNECT.getState().equals(e.getSQLState())
        && e.getCause() == null
        && message.toLowerCase(Locale.ROOT).contains("timed out")) {
      // pgjdbc's loginTimeout: the server took the connection and did not answer the log-in.
      return hosts(jdbcUrl)
          + " accepted the connection but did not answer within the login timeout (loginTimeout, "
          + TIMEOUT_SECONDS
          + " s unless the URL names it)";
    }
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }

  /** The {@code host:port} pairs {@code jdbcUrl} names, as pgjdbc reads them. */
  private static String hosts(String jdbcUrl) {
    Properties p = jdbcUrl == null ? null : Driver.parseURL(jdbcUrl, null);
    if (p == null) {
      return "the database";
    }
    String[] hosts = PGProperty.PG_HOST.getOrDefault(p).split(",");
    String[] ports = PGProperty.PG_PORT.getOrDefault(p).split(",");
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < hosts.length; i++) {
      sb.append(i == 0 ? "" : ", ").append(hosts[i]).append(':');
      sb.append(i < ports.length ? ports[i] : ports[ports.length - 1]);
    }
    return sb.toString();
  }

  DataSource dataSource() {
    return dataSource;
  }

  String url() {
    return url;
  }

  boolean embedded() {
    return embedded != null;
  }

  @Override
  public void close() throws IOException {
    if (embedded != null) {
      embedded.close();
    }
  }
}
