package dev.relay.faults;

import dev.relay.test.EmbeddedServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A durable PostgreSQL server on its own data directory that the harness can crash (SIGKILL of the
 * postmaster) and start again on the same directory. It runs the launcher's PostgreSQL binaries
 * ({@link EmbeddedServer#binaries()}) through {@code pg_ctl} with the launcher's durable settings
 * ({@link EmbeddedServer#DURABLE_SETTINGS}; without them a crash could lose acknowledged commits
 * and the checker report false violations). The launcher itself cannot serve here: zonky neither
 * kills a postmaster nor restarts one on the same directory. As root, every server command runs
 * under {@code unshare -U}, as zonky does: PostgreSQL refuses to run as root, and in an unmapped
 * user namespace both the process and the root-owned data directory appear as the overflow user.
 *
 * <p>By default the server listens on 127.0.0.1 of the harness's network namespace; a {@link
 * Placement} puts it on a host of its own ({@link Hosts}: its commands run under {@code ip netns
 * exec}, it listens only on that host's address and trusts the run's network) and can give the
 * server process an environment of its own ({@link FaultClock}'s libfaketime).
 *
 * <p>Not thread-safe: one harness thread drives it. {@link #close()} stops the server and deletes
 * the directory.
 */
final class PgCluster implements AutoCloseable {
  /** The launcher's durable settings as {@code pg_ctl -o} options. */
  private static final String DURABLE =
      EmbeddedServer.DURABLE_SETTINGS.entrySet().stream()
          .map(e -> " -c " + e.getKey() + "=" + e.getValue())
          .sorted()
          .collect(Collectors.joining());

  private final Path dir;
  private final Path data;
  private final Path log;
  private final Path bin;
  private final int port;
  private final boolean root;
  private final Placement placement;
  private String extraOptions = "";

  /**
   * Where and how the server runs.
   *
   * @param host the one address it listens on, and the harness connects to
   * @param prefix the words before every server command, such as {@code ip netns exec <ns>}
   * @param trustedNetwork a network (CIDR) whose clients it trusts besides 127.0.0.1, or null
   * @param environment added to the server process's environment (not initdb's)
   */
  record Placement(
      String host, List<String> prefix, String trustedNetwork, Map<String, String> environment) {
    static final Placement LOCAL = new Placement("127.0.0.1", List.of(), null, Map.of());
  }

  /**
   * The machine's PostgreSQL 15 binaries (Debian's {@code postgresql-15}), which include {@code
   * pg_basebackup}; the embedded ones do not.
   */
  static final Path SYSTEM_PG15 = Path.of("/usr/lib/postgresql/15/bin");

  private PgCluster(Path dir, Path bin, int port, Placement placement) {
    this.dir = dir;
    this.placement = placement;
    this.data = dir.resolve("data");
    this.log = dir.resolve("postgres.log");
    this.bin = bin;
    this.port = port;
    this.root = "root".equals(System.getProperty("user.name"));
  }

  /** Creates a data directory under {@code parent} and starts the server on a free port. */
  static PgCluster start(Path parent) throws IOException, InterruptedException {
    return start(parent, EmbeddedServer.binaries());
  }

  /** As {@link #start(Path)}, placed as {@code placement} says. */
  static PgCluster start(Path parent, Placement placement)
      throws IOException, InterruptedException {
    return start(parent, EmbeddedServer.binaries(), placement);
  }

  /** As {@link #start(Path)}, with the binaries in {@code bin}. */
  static PgCluster start(Path parent, Path bin) throws IOException, InterruptedException {
    return start(parent, bin, Placement.LOCAL);
  }

  /** As {@link #start(Path, Path)}, placed as {@code placement} says. */
  static PgCluster start(Path parent, Path bin, Placement placement)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory(parent, "pg-");
    PgCluster cluster = new PgCluster(dir, bin, freePort(), placement);
    cluster.run(
        List.of(
            bin.resolve("initdb").toString(),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF-8",
            "-D",
            cluster.data.toString()),
        120,
        false);
    if (placement.trustedNetwork() != null) {
      Files.writeString(
          cluster.data.resolve("pg_hba.conf"),
          "host all all " + placement.trustedNetwork() + " trust\n",
          StandardOpenOption.APPEND);
    }
    cluster.startServer();
    return cluster;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Starts the server on the data directory, retrying while a killed one is still going away. */
  void startServer() throws IOException, InterruptedException {
    String options =
        "-p "
            + port
            + " -c listen_addresses="
            + placement.host()
            + " -c unix_socket_directories="
            + dir
            + DURABLE
            + " -c max_connections=200 -c shared_buffers=64MB"
            + extraOptions;
    IOException last = null;
    for (int i = 0; i < 30; i++) {
      try {
        run(
            List.of(
                bin.resolve("pg_ctl").toString(),
                "-D",
                data.toString(),
                "-l",
                log.toString(),
                "-w",
                "-t",
                "120",
                "-o",
                options,
                "start"),
            180,
            true);
        awaitConnectable();
        return;
      } catch (IOException e) {
        last = e; // the killed postmaster's children may still hold the lock file for a moment
        Thread.sleep(1000);
      }
    }
    throw last;
  }

  private void awaitConnectable() throws IOException, InterruptedException {
    for (int i = 0; i < 120; i++) {
      try (Connection c = DriverManager.getConnection(jdbcUrl())) {
        if (c.isValid(10)) {
          return;
        }
      } catch (SQLException e) {
        Thread.sleep(500);
      }
    }
    throw new IOException("PostgreSQL did not accept connections; log " + log);
  }

  /**
   * A streaming standby of this server on a port of its own: {@code pg_basebackup -R} through
   * {@code replicationPort} (a proxy in front of this server, so the harness can hold the stream
   * back), then started. Asynchronous until the primary names it in {@code
   * synchronous_standby_names}.
   */
  PgCluster standby(Path parent, int replicationPort) throws IOException, InterruptedException {
    Path standbyDir = Files.createTempDirectory(parent, "standby-");
    PgCluster standby = new PgCluster(standbyDir, bin, freePort(), Placement.LOCAL);
    standby.run(
        List.of(
            bin.resolve("pg_basebackup").toString(),
            "-h",
            "127.0.0.1",
            "-p",
            Integer.toString(replicationPort),
            "-U",
            "postgres",
            "-D",
            standby.data.toString(),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast"),
        300,
        false);
    standby.startServer();
    return standby;
  }

  /** Promotes this standby and waits until it accepts writes. */
  void promote() throws IOException, InterruptedException {
    run(
        List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-w", "promote"),
        180,
        false);
    for (int i = 0; i < 240; i++) {
      try (Connection c = DriverManager.getConnection(jdbcUrl());
          var s = c.createStatement();
          var r = s.executeQuery("SELECT pg_is_in_recovery()")) {
        r.next();
        if (!r.getBoolean(1)) {
          return;
        }
      } catch (SQLException e) {
        // still starting
      }
      Thread.sleep(500);
    }
    throw new IOException("the promoted standby still recovers; log " + log);
  }

  /** Server settings added to every start, as {@code pg_ctl -o} text ({@code " -c k=v"}). */
  void extraOptions(String options) {
    this.extraOptions = options;
  }

  /** Kills the postmaster with SIGKILL: a crash. Its backends notice and exit on their own. */
  void crash() throws IOException, InterruptedException {
    Path pidFile = data.resolve("postmaster.pid");
    if (!Files.exists(pidFile)) {
      return;
    }
    long pid = Long.parseLong(Files.readAllLines(pidFile, StandardCharsets.UTF_8).get(0).trim());
    Optional<ProcessHandle> postmaster = ProcessHandle.of(pid);
    postmaster.ifPresent(
        p -> {
          List<ProcessHandle> children = p.children().toList();
          p.destroyForcibly();
          // Backends exit when they see the postmaster gone; kill them too so restart is quick.
          children.forEach(ProcessHandle::destroyForcibly);
        });
    for (int i = 0; i < 100 && postmaster.map(ProcessHandle::isAlive).orElse(false); i++) {
      Thread.sleep(100);
    }
  }

  /** Stops the server at once (no checkpoint), if it runs. */
  void stopImmediately() {
    try {
      run(
          List.of(
              bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "stop"),
          60,
          false);
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
  }

  int port() {
    return port;
  }

  static String jdbcUrl(int port) {
    return jdbcUrl("127.0.0.1", port);
  }

  static String jdbcUrl(String host, int port) {
    return "jdbc:postgresql://"
        + host
        + ":"
        + port
        + "/postgres?user=postgres&sslmode=disable&gssEncMode=disable&connectTimeout=10";
  }

  String jdbcUrl() {
    return jdbcUrl(placement.host(), port);
  }

  /** The address the server listens on. */
  String host() {
    return placement.host();
  }

  Path log() {
    return log;
  }

  /** Runs a command of the server's, with the server's environment if {@code server}. */
  private void run(List<String> command, int timeoutSeconds, boolean server)
      throws IOException, InterruptedException {
    List<String> full = new ArrayList<>(placement.prefix());
    if (root) {
      full.add("unshare");
      full.add("-U");
    }
    full.addAll(command);
    Path out = dir.resolve("pg_ctl.out");
    ProcessBuilder builder =
        new ProcessBuilder(full)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(out.toFile()));
    if (server) {
      builder.environment().putAll(placement.environment());
    }
    Process p = builder.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("timed out: " + full);
    }
    if (server && placement.environment().containsKey("FAKETIME_TIMESTAMP_FILE")) {
      FaultClock.releaseShared(p.pid());
    }
    if (p.exitValue() != 0) {
      throw new IOException("failed (" + p.exitValue() + "): " + full + "; see " + out);
    }
  }

  @Override
  public void close() {
    stopImmediately();
    try {
      crash(); // in case pg_ctl could not stop it
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
    Files2.deleteTree(dir);
  }
}
