package dev.relay.test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Debian's PgBouncer ({@code /usr/sbin/pgbouncer}, package {@code pgbouncer}) started on a free
 * port of 127.0.0.1 in front of a test PostgreSQL server, in <b>transaction pooling</b> mode by
 * default, with its configuration and log in a temporary directory:
 *
 * <pre>{@code
 * try (PgBouncer bouncer = PgBouncer.inFrontOf(db)) {
 *   DataSource pooled = ...bouncer.jdbcUrl(db)...;   // through PgBouncer, prepareThreshold=0
 *   DataSource direct = ...db.jdbcUrl()...;          // LISTEN and session locks
 * }
 * }</pre>
 *
 * <p>It authenticates clients with {@code auth_type = trust} and logs in to the server as the
 * client's user without a password, so the server must trust 127.0.0.1 (the embedded servers and
 * CI's PostgreSQL do). As root it runs under {@code unshare -U}, as the embedded servers do:
 * PgBouncer refuses to run as root. The process is stopped by {@link #close()} and, should a test
 * not get there, when the JVM exits. Missing PgBouncer fails (never skips) with the install
 * command.
 */
public final class PgBouncer implements AutoCloseable {
  /** Where Debian's package installs the binary. */
  public static final Path BINARY = Path.of("/usr/sbin/pgbouncer");

  private static final Pattern VERSION = Pattern.compile("PgBouncer (\\d+\\.\\d+(\\.\\d+)?)");

  private final Path dir;
  private final Process process;
  private final int port;
  private final String version;
  private final Thread hook;

  private PgBouncer(Path dir, Process process, int port, String version) {
    this.dir = dir;
    this.process = process;
    this.port = port;
    this.version = version;
    this.hook = new Thread(this::stop, "pgbouncer-stop");
  }

  /**
   * Starts PgBouncer in transaction pooling mode in front of the test database's server.
   *
   * @param db the database to pool connections to
   * @return the running PgBouncer
   * @throws IOException if it is not installed or does not start
   */
  public static PgBouncer inFrontOf(TestDatabase db) throws IOException {
    return start(db.host(), db.port(), db.user(), Map.of());
  }

  /**
   * Starts PgBouncer in front of {@code host:port}, for clients logging in as {@code user}.
   *
   * @param host the server's host
   * @param port the server's port
   * @param user the one user clients log in as
   * @param settings more {@code [pgbouncer]} settings, overriding the defaults (for example {@code
   *     pool_mode = session} or {@code default_pool_size})
   * @return the running PgBouncer
   * @throws IOException if it is not installed or does not start
   */
  public static PgBouncer start(String host, int port, String user, Map<String, String> settings)
      throws IOException {
    if (!Files.isExecutable(BINARY)) {
      throw new IOException(
          BINARY + " is missing: install it with 'apt-get install -y pgbouncer' (as root)");
    }
    String version = version();
    Path dir = Files.createTempDirectory("relay-pgbouncer-");
    int listenPort = freePort();
    Map<String, String> all = new LinkedHashMap<>();
    all.put("listen_addr", "127.0.0.1");
    all.put("listen_port", Integer.toString(listenPort));
    all.put("unix_socket_dir", "");
    all.put("auth_type", "trust");
    all.put("auth_file", dir.resolve("users.txt").toString());
    all.put("pool_mode", "transaction");
    all.put("max_client_conn", "1000");
    all.put("default_pool_size", "20");
    // pgjdbc sends extra_float_digits at start; PgBouncer before 1.20 refuses unknown parameters.
    all.put("ignore_startup_parameters", "extra_float_digits");
    all.put("logfile", dir.resolve("pgbouncer.log").toString());
    all.put("pidfile", dir.resolve("pgbouncer.pid").toString());
    all.putAll(settings);
    StringBuilder ini = new StringBuilder();
    ini.append("[databases]\n* = host=").append(host).append(" port=").append(port).append('\n');
    ini.append("[pgbouncer]\n");
    all.forEach((k, v) -> ini.append(k).append(" = ").append(v).append('\n'));
    Files.writeString(dir.resolve("pgbouncer.ini"), ini, StandardCharsets.UTF_8);
    Files.writeString(dir.resolve("users.txt"), "\"" + user + "\" \"\"\n", StandardCharsets.UTF_8);
    List<String> command = new ArrayList<>();
    if ("root".equals(System.getProperty("user.name"))) {
      command.add("unshare");
      command.add("-U");
    }
    command.add(BINARY.toString());
    command.add(dir.resolve("pgbouncer.ini").toString());
    Process process =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("pgbouncer.out").toFile())
            .start();
    PgBouncer bouncer = new PgBouncer(dir, process, listenPort, version);
    Runtime.getRuntime().addShutdownHook(bouncer.hook);
    try {
      bouncer.awaitListening();
    } catch (IOException | RuntimeException e) {
      bouncer.close();
      throw e;
    }
    return bouncer;
  }

  /** The installed PgBouncer's version, for example {@code 1.18.0}. */
  public static String version() throws IOException {
    Process p =
        new ProcessBuilder(BINARY.toString(), "--version").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      p.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    Matcher m = VERSION.matcher(out);
    if (!m.find()) {
      throw new IOException("cannot read PgBouncer's version from: " + out);
    }
    return m.group(1);
  }

  private void awaitListening() throws IOException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < end) {
      if (!process.isAlive()) {
        throw new IOException("PgBouncer exited at start: " + log());
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        return;
      } catch (IOException e) {
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", ie);
        }
      }
    }
    throw new IOException("PgBouncer did not listen within 60 s: " + log());
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** The port on 127.0.0.1 that PgBouncer listens on. */
  public int port() {
    return port;
  }

  /** The running PgBouncer's version, for example {@code 1.18.0}. */
  public String runningVersion() {
    return version;
  }

  /**
   * The test database's URL through PgBouncer, with {@code prepareThreshold=0}: pgjdbc then never
   * names a server-side prepared statement, which a transaction-pooled connection could not find
   * again on its next transaction (PgBouncer before 1.21, or without {@code
   * max_prepared_statements}).
   *
   * @param db the database PgBouncer pools connections to
   * @return the URL
   */
  public String jdbcUrl(TestDatabase db) {
    return db.jdbcUrlVia("127.0.0.1", port) + "&prepareThreshold=0";
  }

  /** PgBouncer's log so far (for failure messages). */
  public String log() {
    StringBuilder b = new StringBuilder();
    for (String name : List.of("pgbouncer.out", "pgbouncer.log")) {
      try {
        b.append(Files.readString(dir.resolve(name), StandardCharsets.UTF_8));
      } catch (IOException e) {
        // not written
      }
    }
    return b.toString();
  }

  private void stop() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /** Stops PgBouncer and deletes its directory. */
  @Override
  public void close() {
    stop();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is exiting: the hook runs anyway
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory: left to the system
    }
  }
}
