package dev.relay.test;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
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
 * <p>A server on a kept directory records its owner, the JVM that started it, in {@value
 * #OWNER_FILE} there (its PID and start time; written after the start, removed after a clean stop).
 * When that JVM dies without stopping its server ({@code kill -9}, a crash), the server keeps
 * running, orphaned: the next {@link Builder#start()} on the directory stops it first with a fast
 * shutdown ({@code SIGINT} to its postmaster, waiting up to two minutes for it to exit: the data
 * stays as a clean shutdown leaves it, no file is removed), says so in one line, and then starts as
 * usual. A server whose owner is alive, or one with no owner recorded (started by hand or by an
 * older Relay), is left alone: the start then fails at once, naming the directory and the
 * postmaster's PID, instead of waiting out the startup timeout. {@link #runningIn} and {@link
 * #ownerOf} let a client use a live owner's server.
 *
 * <p>It does not restart or crash a server on the same directory (zonky cannot); a harness that
 * needs that runs {@code pg_ctl} from {@link #binaries()} with {@link #DURABLE_SETTINGS}.
 */
public final class EmbeddedServer implements AutoCloseable {
  /** The settings that make commits durable, as {@code -c} server settings. */
  public static final Map<String, String> DURABLE_SETTINGS =
      Map.of("fsync", "on", "synchronous_commit", "on", "full_page_writes", "on");

  /** The file in a kept data directory that names the JVM owning the server running on it. */
  public static final String OWNER_FILE = "relay-owner.pid";

  /** How long an orphan's fast shutdown may take (a checkpoint of what it had not written). */
  private static final Duration ORPHAN_STOP_WAIT = Duration.ofMinutes(2);

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
    private Consumer<String> notes = System.err::println;

    private Builder() {}

    /** Where the one line saying an orphaned server was stopped goes (default standard error). */
    public Builder notes(Consumer<String> notes) {
      this.notes = Objects.requireNonNull(notes, "notes");
      return this;
    }

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
     * Starts the server, first stopping an orphaned one on the same data directory (see the class
     * comment).
     *
     * @throws IOException if the directory or log cannot be created, a live server that is not
     *     orphaned holds the data directory (at once, one line naming the directory and the
     *     postmaster's PID), an orphan does not stop, or the server does not start (the message
     *     then includes the end of its log)
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
        takeOverOrphan(dataDirectory, notes);
        b.setDataDirectory(dataDirectory).setCleanDataDirectory(false);
      }
      EmbeddedPostgres started;
      try {
        started = b.start();
      } catch (IOException | RuntimeException e) {
        String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        throw new IOException(
            "embedded PostgreSQL did not start: " + why + "\nserver log " + log + ":\n" + tail(log),
            e);
      }
      if (dataDirectory != null) {
        try {
          writeOwner(dataDirectory);
        } catch (IOException | RuntimeException e) {
          started.close();
          throw new IOException("cannot record the owner of the server on " + dataDirectory, e);
        }
      }
      return new EmbeddedServer(started, dataDirectory, log, stopOnExit);
    }
  }

  /**
   * Stops the server on {@code dir} if it is orphaned; fails at once if a live server that is not
   * orphaned holds it; does nothing when no live server does.
   */
  private static void takeOverOrphan(Path dir, Consumer<String> notes) throws IOException {
    OptionalLong postmaster = postmasterOf(dir);
    if (postmaster.isEmpty()) {
      return; // no server, or a stale postmaster.pid that PostgreSQL itself replaces
    }
    long pid = postmaster.getAsLong();
    Optional<Owner> owner = Owner.read(dir);
    if (owner.isEmpty()) {
      throw new IOException(
          "its data directory "
              + dir
              + " is in use by a PostgreSQL server (postmaster PID "
              + pid
              + ") that no process is recorded to own: stop it (pg_ctl stop -m fast -D "
              + dir
              + ", or kill -INT "
              + pid
              + ") and try again");
    }
    if (owner.get().alive()) {
      throw new IOException(
          "its data directory "
              + dir
              + " is in use by the PostgreSQL server (postmaster PID "
              + pid
              + ") of the running process "
              + owner.get().pid());
    }
    if (!isPostgres(pid)) {
      // postmaster.pid and the owner file both survived a reboot, and the PID now belongs to
      // another program: never signal it
      throw new IOException(
          "its data directory "
              + dir
              + " names postmaster PID "
              + pid
              + ", which is not a PostgreSQL server now: if no server runs on it, remove "
              + dir.resolve("postmaster.pid")
              + " and try again");
    }
    notes.accept(
        "relay: stopping the orphaned embedded PostgreSQL (postmaster PID "
            + pid
            + ") on "
            + dir
            + ", left running by process "
            + owner.get().pid()
            + " which has exited");
    // SIGINT is PostgreSQL's fast shutdown: clients are disconnected, a checkpoint is written and
    // postmaster.pid removed; nothing is lost or deleted. A signal rather than pg_ctl, which
    // refuses to run as root (zonky runs the server in a user namespace then).
    Process signal =
        new ProcessBuilder("kill", "-INT", Long.toString(pid)).redirectErrorStream(true).start();
    try {
      String output;
      try (var in = signal.getInputStream()) {
        output = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
      }
      if (!signal.waitFor(1, TimeUnit.MINUTES) || signal.exitValue() != 0) {
        signal.destroyForcibly();
        throw new IOException(
            "cannot stop the orphaned PostgreSQL server (postmaster PID "
                + pid
                + ") on "
                + dir
                + ": kill -INT "
                + pid
                + ": "
                + output);
      }
      var handle = ProcessHandle.of(pid);
      if (handle.isPresent()) {
        handle.get().onExit().get(ORPHAN_STOP_WAIT.toSeconds(), TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while stopping the orphaned server on " + dir, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IOException(
          "the orphaned PostgreSQL server (postmaster PID "
              + pid
              + ") on "
              + dir
              + " did not stop within "
              + ORPHAN_STOP_WAIT.toSeconds()
              + " s of a fast shutdown; see its log",
          e);
    }
  }

  /** The PID in {@code dir}'s {@code postmaster.pid}, if that process is alive. */
  /** Whether the live process {@code pid} runs a {@code postgres} executable. */
  private static boolean isPostgres(long pid) {
    return ProcessHandle.of(pid)
        .flatMap(h -> h.info().command())
        .map(c -> c.endsWith("/postgres") || c.equals("postgres"))
        .orElse(false);
  }

  private static OptionalLong postmasterOf(Path dir) {
    try {
      List<String> lines = Files.readAllLines(dir.resolve("postmaster.pid"));
      long pid = Long.parseLong(lines.get(0).strip());
      return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
          ? OptionalLong.of(pid)
          : OptionalLong.empty();
    } catch (IOException | RuntimeException e) {
      return OptionalLong.empty(); // none, or being written or removed
    }
  }

  private static void writeOwner(Path dir) throws IOException {
    ProcessHandle self = ProcessHandle.current();
    String started = self.info().startInstant().map(i -> "" + i.toEpochMilli()).orElse("");
    Path tmp = dir.resolve(OWNER_FILE + ".tmp");
    Files.writeString(tmp, self.pid() + "\n" + started + "\n");
    Files.move(
        tmp,
        dir.resolve(OWNER_FILE),
        StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }

  /** The process an owner file names: its PID and, to tell a reused PID, its start time. */
  private record Owner(long pid, OptionalLong startedMillis) {
    static Optional<Owner> read(Path dir) {
      try {
        List<String> lines = Files.readAllLines(dir.resolve(OWNER_FILE));
        long pid = Long.parseLong(lines.get(0).strip());
        OptionalLong started =
            lines.size() > 1 && !lines.get(1).isBlank()
                ? OptionalLong.of(Long.parseLong(lines.get(1).strip()))
                : OptionalLong.empty();
        return Optional.of(new Owner(pid, started));
      } catch (IOException | RuntimeException e) {
        return Optional.empty();
      }
    }

    boolean alive() {
      Optional<ProcessHandle> handle = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
      if (handle.isEmpty()) {
        return false;
      }
      Optional<Instant> actual = handle.get().info().startInstant();
      // another process under a reused PID started at another time (1 s for clock-tick rounding)
      return startedMillis.isEmpty()
          || actual.isEmpty()
          || Math.abs(actual.get().toEpochMilli() - startedMillis.getAsLong()) < 1000;
    }
  }

  /**
   * The PID of the live process that started the server running on {@code dataDirectory}, as its
   * {@value #OWNER_FILE} records it.
   *
   * @return the PID, or empty when no owner is recorded or the recorded one has exited (a server
   *     still running on the directory is then orphaned, or was not started by this launcher)
   */
  public static OptionalLong ownerOf(Path dataDirectory) {
    return Owner.read(dataDirectory)
        .filter(Owner::alive)
        .map(o -> OptionalLong.of(o.pid()))
        .orElse(OptionalLong.empty());
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

  /**
   * Stops the server (a throwaway data directory is deleted; a kept one loses its {@value
   * #OWNER_FILE}).
   */
  @Override
  public void close() throws IOException {
    if (stopOnExit != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(stopOnExit);
      } catch (IllegalStateException e) {
        // the JVM is already shutting down: the hook may be stopping the server as well
      }
    }
    stop();
  }

  /** Stops the server, then forgets its owner: a crash in between leaves a dead owner, harmless. */
  private void stop() throws IOException {
    postgres.close();
    if (dataDirectory != null) {
      Files.deleteIfExists(dataDirectory.resolve(OWNER_FILE));
    }
  }

  private void stopQuietly() {
    try {
      stop();
    } catch (IOException | RuntimeException e) {
      System.err.println("embedded PostgreSQL did not stop cleanly: " + e);
    }
  }
}
