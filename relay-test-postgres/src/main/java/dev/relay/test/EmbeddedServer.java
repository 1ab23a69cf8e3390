package dev.relay.test;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * An embedded PostgreSQL 18 (zonky's binaries) on 127.0.0.1: the one launcher behind the test kit's
 * server, {@code relay} commands without a database, the benchmark, and (for its binaries and
 * settings) the fault suite.
 *
 * <pre>{@code
 * try (EmbeddedServer pg =
 *     EmbeddedServer.builder().dataDirectory(Path.of("target/pgdata")).start()) {
 *   DataSource ds = pg.dataSource();
 *   // ...
 * }
 * }</pre>
 *
 * <p>Durable by default: {@code fsync}, {@code synchronous_commit} and {@code full_page_writes} are
 * on ({@link #DURABLE_SETTINGS}; zonky's own starter turns the first two off, and a commit such a
 * server acknowledged can be lost in a crash). Only unit tests should ask for {@link
 * Builder#durable(boolean) durable(false)}. With {@link Builder#dataDirectory} the data is kept in
 * that directory (initialised on first use, never cleaned), so work outlives the process; without
 * it a throwaway directory is used. A data directory is locked by the server using it: two servers
 * cannot share one.
 *
 * <p>It does not restart or crash a server on the same directory (zonky cannot); a harness that
 * needs that runs {@code pg_ctl} from {@link #binaries()} with {@link #DURABLE_SETTINGS}.
 */
public final class EmbeddedServer implements AutoCloseable {
  /** The settings that make commits durable, as {@code -c} server settings. */
  public static final Map<String, String> DURABLE_SETTINGS =
      Map.of("fsync", "on", "synchronous_commit", "on", "full_page_writes", "on");

  private final EmbeddedPostgres postgres;
  private final Path dataDirectory;
  private final Path logFile;
  private final Thread stopOnExit; // null unless the builder asked for it

  private EmbeddedServer(
      EmbeddedPostgres postgres, Path dataDirectory, Path logFile, boolean stopOnExit) {
    this.postgres = postgres;
    this.dataDirectory = dataDirectory;
    this.logFile = logFile;
    this.stopOnExit = stopOnExit ? new Thread(this::stopQuietly, "relay-postgres-stop") : null;
    if (this.stopOnExit != null) {
      Runtime.getRuntime().addShutdownHook(this.stopOnExit);
    }
  }

  /** A builder for a durable server in a throwaway directory. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link EmbeddedServer}. */
  public static final class Builder {
    private boolean durable = true;
    private Path dataDirectory;
    private Path logFile;
    private Duration startupWait = Duration.ofSeconds(90);
    private boolean stopOnExit;
    private final Map<String, String> settings = new LinkedHashMap<>();

    private Builder() {}

    /**
     * Whether commits are flushed to disk (default {@code true}). {@code false} turns {@code fsync}
     * and {@code synchronous_commit} off: faster, and only for tests of logic.
     */
    public Builder durable(boolean durable) {
      this.durable = durable;
      return this;
    }

    /**
     * Keeps the data in {@code directory}: created if missing, initialised on first use, never
     * cleaned. The server log then goes next to it ({@code <directory>.log}) unless {@link
     * #logFile} says otherwise.
     */
    public Builder dataDirectory(Path directory) {
      this.dataDirectory = Objects.requireNonNull(directory, "directory").toAbsolutePath();
      return this;
    }

    /** Where the server's output goes (appended); default a temporary file deleted on exit. */
    public Builder logFile(Path logFile) {
      this.logFile = Objects.requireNonNull(logFile, "logFile");
      return this;
    }

    /** A server setting passed as {@code -c name=value}; later settings win over the defaults. */
    public Builder serverConfig(String name, String value) {
      settings.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Whether the server is stopped when this JVM exits without closing it (default {@code false}):
     * on {@code SIGTERM} or {@code SIGINT} (a terminal's Ctrl-C, {@code timeout}, a container's
     * stop) a shutdown hook stops it, and a throwaway data directory is deleted. Without it such an
     * exit leaves the server running. An owner whose own shutdown hook still needs the database (to
     * let running work finish) leaves this off and closes the server at the end of that hook: JVM
     * shutdown hooks run in no set order.
     */
    public Builder stopOnExit(boolean stopOnExit) {
      this.stopOnExit = stopOnExit;
      return this;
    }

    /** How long to wait for the server to accept connections (default 90 s). */
    public Builder startupWait(Duration wait) {
      this.startupWait = Objects.requireNonNull(wait, "wait");
      return this;
    }

    /**
     * Starts the server.
     *
     * @throws IOException if the directory or log cannot be created, or the server does not start
     *     (the message then includes the end of its log)
     */
    public EmbeddedServer start() throws IOException {
      Path log = logFile;
      if (log == null && dataDirectory != null) {
        log = dataDirectory.resolveSibling(dataDirectory.getFileName() + ".log");
      }
      if (log == null) {
        log = Files.createTempFile("relay-postgres-", ".log");
        log.toFile().deleteOnExit();
      }
      EmbeddedPostgres.Builder b =
          EmbeddedPostgres.builder()
              .setServerConfig("listen_addresses", "127.0.0.1")
              .setPGStartupWait(startupWait)
              .setRegisterShutdownHook(false) // close() stops it; owners install their own hooks
              .setOutputRedirector(Redirect.appendTo(log.toFile()))
              .setErrorRedirector(Redirect.appendTo(log.toFile()));
      if (durable) {
        // zonky passes -F (fsync off) and synchronous_commit=off; later -c settings win.
        DURABLE_SETTINGS.forEach(b::setServerConfig);
      }
      settings.forEach(b::setServerConfig);
      if (dataDirectory != null) {
        Files.createDirectories(dataDirectory);
        b.setDataDirectory(dataDirectory).setCleanDataDirectory(false);
      }
      try {
        return new EmbeddedServer(b.start(), dataDirectory, log, stopOnExit);
      } catch (IOException | RuntimeException e) {
        String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        throw new IOException(
            "embedded PostgreSQL did not start: " + why + "\nserver log " + log + ":\n" + tail(log),
            e);
      }
    }
  }

  private static String tail(Path log) {
    try {
      var lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException | RuntimeException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /**
   * The directory of zonky's extracted PostgreSQL binaries ({@code initdb}, {@code pg_ctl}, ...),
   * extracting them once (by starting and stopping a throwaway server) if needed.
   *
   * @throws IOException if they cannot be found or extracted
   */
  public static Path binaries() throws IOException {
    Optional<Path> found = findBinaries();
    if (found.isPresent()) {
      return found.get();
    }
    try (EmbeddedServer once = builder().durable(false).start()) {
      once.port();
    }
    return findBinaries()
        .orElseThrow(() -> new IOException("zonky did not extract PostgreSQL binaries"));
  }

  private static Optional<Path> findBinaries() throws IOException {
    Path root = Path.of(System.getProperty("java.io.tmpdir"), "embedded-pg");
    if (!Files.isDirectory(root)) {
      return Optional.empty();
    }
    try (Stream<Path> dirs = Files.list(root)) {
      return dirs.map(d -> d.resolve("bin"))
          .filter(bin -> Files.isExecutable(bin.resolve("pg_ctl")))
          .filter(bin -> Files.isExecutable(bin.resolve("initdb")))
          .findFirst();
    }
  }

  /**
   * The JDBC URL (database and user {@code postgres} on 127.0.0.1) of a server already running on
   * {@code dataDirectory}, as its {@code postmaster.pid} names it: the process is alive and the
   * server says it is ready to accept connections. Another process's server holds the directory's
   * lock, so a second {@link Builder#start()} on it fails; its owner may stop it at any time.
   *
   * @return the URL, or empty when no live, ready server runs on the directory (no {@code
   *     postmaster.pid}, a stale one, or a server still starting or stopping)
   */
  public static Optional<String> runningIn(Path dataDirectory) {
    Path pidFile = dataDirectory.resolve("postmaster.pid");
    List<String> lines;
    try {
      lines = Files.readAllLines(pidFile);
    } catch (IOException e) {
      return Optional.empty(); // no server, or its file is being written or removed
    }
    // postmaster.pid: pid, data directory, start time, port, socket directory, listen address,
    // shared memory key, status
    if (lines.size() < 8 || !"ready".equals(lines.get(7).strip())) {
      return Optional.empty();
    }
    try {
      long pid = Long.parseLong(lines.get(0).strip());
      int port = Integer.parseInt(lines.get(3).strip());
      if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
        return Optional.of("jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres");
      }
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }

  /** The port on 127.0.0.1. */
  public int port() {
    return postgres.getPort();
  }

  /** A JDBC URL for database {@code postgres} as user {@code postgres}. */
  public String jdbcUrl() {
    return postgres.getJdbcUrl("postgres", "postgres");
  }

  /** A data source (unpooled) for {@link #jdbcUrl()}. */
  public DataSource dataSource() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(jdbcUrl());
    return ds;
  }

  /** The kept data directory, or empty for a throwaway one. */
  public Optional<Path> dataDirectory() {
    return Optional.ofNullable(dataDirectory);
  }

  /** The file the server's output is appended to. */
  public Path logFile() {
    return logFile;
  }

  /** Stops the server (a throwaway data directory is deleted). */
  @Override
  public void close() throws IOException {
    if (stopOnExit != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(stopOnExit);
      } catch (IllegalStateException e) {
        // the JVM is already shutting down: the hook may be stopping the server as well
      }
    }
    postgres.close();
  }

  private void stopQuietly() {
    try {
      postgres.close();
    } catch (IOException | RuntimeException e) {
      System.err.println("embedded PostgreSQL did not stop cleanly: " + e);
    }
  }
}
