package dev.relay.app;

import dev.relay.test.EmbeddedServer;
import dev.relay.test.JdbcUrls;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Optional;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

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
 * starting one ({@link EmbeddedServer#runningIn}, {@link EmbeddedServer#ownerOf}). A server whose
 * process has exited without stopping it ({@code kill -9}) is orphaned: the command stops it (fast
 * shutdown, no data lost) and starts its own, saying so.
 */
final class Database implements AutoCloseable {
  private final EmbeddedServer embedded;
  private final String url;
  private final DataSource dataSource;

  private Database(EmbeddedServer embedded, String url) {
    this.embedded = embedded;
    this.url = url;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(JdbcUrls.withTimeouts(url));
    this.dataSource = ds;
  }

  /**
   * Connects to {@code jdbcUrl}, or starts a throwaway embedded server when it is {@code null} (an
   * empty URL is refused before, by {@link DbCommand#jdbcUrl}).
   *
   * @param source what gave the URL ({@link DbCommand#urlSource}), for a refusal of its values
   * @throws InvalidJdbcUrlException if the database refuses a value the URL gives
   */
  static Database open(String jdbcUrl, String source, PrintStream notes)
      throws IOException, SQLException {
    if (jdbcUrl != null) {
      return connect(jdbcUrl, source);
    }
    notes.println("(no --jdbc-url given: starting an embedded PostgreSQL 18 on 127.0.0.1)");
    return start(EmbeddedServer.builder().stopOnExit(true));
  }

  /**
   * Connects to {@code jdbcUrl}, or, when it is {@code null}, starts an embedded server whose data
   * is kept in {@code dataDirectory} (created, and initialised on first use).
   *
   * @param source what gave the URL ({@link DbCommand#urlSource}), for a refusal of its values
   * @throws DatabaseUnavailableException if the database cannot be reached or started
   * @throws InvalidJdbcUrlException if the database refuses a value the URL gives
   */
  static Database openPersistent(
      String jdbcUrl, String source, Path dataDirectory, PrintStream notes) {
    if (jdbcUrl != null) {
      try {
        return connect(jdbcUrl, source);
      } catch (SQLException e) {
        throw new DatabaseUnavailableException(JdbcUrls.describe(e, jdbcUrl), e);
      }
    }
    Path dir = dataDirectory.toAbsolutePath();
    Optional<String> running = EmbeddedServer.runningIn(dir);
    OptionalLong owner = EmbeddedServer.ownerOf(dir);
    if (running.isPresent() && owner.isPresent()) {
      // The process that started the server on this directory (relay serve, say) still runs and
      // holds its lock: use that server while it runs. An orphan, whose owner has exited, is
      // stopped and replaced by the start below.
      try {
        Database shared = connect(running.get(), "the embedded PostgreSQL's URL");
        notes.println(
            "relay: no --jdbc-url or RELAY_JDBC_URL: using the embedded PostgreSQL that process "
                + owner.getAsLong()
                + " runs on "
                + dir
                + " ("
                + running.get()
                + ")");
        return shared;
      } catch (SQLException e) {
        // stopping: try to start it as usual
      }
    }
    notes.println(
        "relay: no --jdbc-url or RELAY_JDBC_URL: using an embedded PostgreSQL 18 on 127.0.0.1"
            + " with its data kept in "
            + dir);
    try {
      return start(
          EmbeddedServer.builder().dataDirectory(dir).stopOnExit(true).notes(notes::println));
    } catch (IOException | RuntimeException e) {
      String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      if (why.contains("could not lock")) {
        why =
            "its data directory "
                + dir
                + " is in use by another process, whose server is not accepting"
                + " connections (starting or stopping): try again, or name the database with"
                + " --jdbc-url";
      }
      throw new DatabaseUnavailableException("cannot start the embedded PostgreSQL: " + why, e);
    }
  }

  private static Database connect(String jdbcUrl, String source) throws SQLException {
    try (Connection probe = DriverManager.getConnection(JdbcUrls.withTimeouts(jdbcUrl))) {
      probe.isValid(5);
    } catch (SQLException e) {
      String refused = JdbcUrls.refusedParameter(source, jdbcUrl, e);
      if (refused != null) {
        throw new InvalidJdbcUrlException(refused, e);
      }
      throw e;
    }
    return new Database(null, jdbcUrl);
  }

  private static Database start(EmbeddedServer.Builder builder) throws IOException {
    EmbeddedServer pg = builder.start();
    return new Database(pg, pg.jdbcUrl());
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
