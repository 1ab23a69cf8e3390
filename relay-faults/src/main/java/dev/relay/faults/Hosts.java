package dev.relay.faults;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fault suite's hosts: PostgreSQL and each worker in a network namespace of its own, each with
 * one veth pair into a bridge in a hub namespace that the run owns. The harness (the workers'
 * proxy, the producer, the checker) stays in the caller's namespace and joins the bridge through a
 * veth pair of its own. Every host has one interface, {@code eth0}, with an address in a {@code
 * /24} of 198.18.0.0/15 (the range set aside for network tests, RFC 2544) that no other run on the
 * machine uses, and no route but that network's: no default route, so nothing can leave the run's
 * bridge.
 *
 * <pre>
 *   caller's namespace           hub namespace (bridge br0)          host namespaces
 *   rfx&lt;pid&gt;-&lt;n&gt; 198.18.k.1  ---  harness | pg | w0 | w1 ...  ---  eth0 198.18.k.2 (pg), .10 (w0), .11 (w1) ...
 * </pre>
 *
 * <p>Names are {@code rfx-<pid>-<n>-<host>} ({@code rfx-<pid>-<n>-hub} for the hub), with the
 * harness's PID and a counter of runs in this JVM, so they are unique per run. {@link #close()}
 * kills whatever still runs in them and deletes them (the bridge, the veth pairs and the caller's
 * end go with them); every run first calls {@link #sweepStale}, which removes the namespaces of
 * runs whose harness PID is gone, so a crashed suite leaves nothing behind past the next run.
 *
 * <p>Faults are nftables rules in a table {@code inet relayfx} of a host's own namespace: a drop
 * per direction on {@code eth0} (a one-way partition), both (a partition), or a random drop with
 * {@code numgen random} (packet loss); {@link #heal} flushes them. It needs root, {@code ip} and
 * {@code nft} ({@link #unavailable()}). Not thread-safe: the harness's one thread drives it.
 */
final class Hosts implements AutoCloseable {
  /** Which traffic of a host a partition drops. */
  enum Direction {
    /** What the host sends: its requests are lost, nothing reaches it either way. */
    OUTBOUND,
    /** What the host receives: its requests arrive and are executed, the replies are lost. */
    INBOUND,
    /** Both. */
    BOTH;

    String text() {
      return switch (this) {
        case OUTBOUND -> "outbound dropped";
        case INBOUND -> "inbound dropped";
        case BOTH -> "both ways dropped";
      };
    }
  }

  static final String PREFIX = "rfx-";
  static final String DATABASE = "pg";
  private static final Pattern RUN_NAME = Pattern.compile("^rfx-(\\d+)-.*");
  private static final Pattern USED_NETWORK = Pattern.compile("198\\.(1[89])\\.(\\d+)\\.\\d+/");
  private static final AtomicInteger RUNS = new AtomicInteger();
  private static final String TABLE = "inet relayfx";

  private final String run;
  private final int number;
  private final String network; // "198.18.k" or "198.19.k"
  private final List<String> hosts;
  private final List<String> namespaces = new ArrayList<>();
  private boolean closed;

  private Hosts(int number, String network, List<String> hosts) {
    this.run = PREFIX + ProcessHandle.current().pid() + "-" + number + "-";
    this.number = number;
    this.network = network;
    this.hosts = hosts;
  }

  /**
   * Why hosts cannot be made here, or null if they can: the harness must be root and find {@code
   * ip} and {@code nft} (Debian's {@code iproute2} and {@code nftables}).
   */
  static String unavailable() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return "network namespaces need root (running as " + System.getProperty("user.name") + ")";
    }
    for (String tool : List.of("ip", "nft")) {
      if (tool(tool) == null) {
        return tool
            + " is not installed (Debian: "
            + (tool.equals("ip") ? "iproute2" : "nftables")
            + ")";
      }
    }
    return null;
  }

  /**
   * Makes the database host and {@code workers} worker hosts ({@code w0} ...) on a network that no
   * other run uses.
   */
  static Hosts create(int workers) throws IOException, InterruptedException {
    String reason = unavailable();
    if (reason != null) {
      throw new IOException("cannot make hosts: " + reason);
    }
    List<String> names = new ArrayList<>();
    names.add(DATABASE);
    for (int i = 0; i < workers; i++) {
      names.add("w" + i);
    }
    // One lock for every run on the machine: no two take the same network between the look and
    // the address that marks it used.
    Path lockFile = Path.of(System.getProperty("java.io.tmpdir"), "relay-faults-hosts.lock");
    synchronized (Hosts.class) { // a file lock is per JVM: threads of one JVM wait here
      try (FileChannel channel =
          FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
        channel.lock(); // released when the channel closes
        Hosts hosts = new Hosts(RUNS.incrementAndGet(), freeNetwork(), names);
        try {
          hosts.build();
        } catch (IOException | InterruptedException | RuntimeException e) {
          hosts.close();
          throw e;
        }
        return hosts;
      }
    }
  }

  private void build() throws IOException, InterruptedException {
    String hub = namespace("hub");
    addNamespace(hub);
    ip("-n", hub, "link", "set", "lo", "up");
    ip("-n", hub, "link", "add", "br0", "type", "bridge");
    ip("-n", hub, "link", "set", "br0", "up");
    // The harness's end: an interface of this namespace, named for the run (15 characters at most).
    String local = "rfx" + ProcessHandle.current().pid() + "-" + number;
    ip("link", "add", local, "type", "veth", "peer", "name", "harness", "netns", hub);
    ip("-n", hub, "link", "set", "harness", "master", "br0", "up");
    ip("addr", "add", harness() + "/24", "dev", local);
    ip("link", "set", local, "up");
    for (String host : hosts) {
      String ns = namespace(host);
      addNamespace(ns);
      ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", host, "netns", hub);
      ip("-n", hub, "link", "set", host, "master", "br0", "up");
      ip("-n", ns, "addr", "add", address(host) + "/24", "dev", "eth0");
      ip("-n", ns, "link", "set", "eth0", "up");
      ip("-n", ns, "link", "set", "lo", "up");
      nft(
          host,
          "add table "
              + TABLE
              + "\nadd chain "
              + TABLE
              + " input { type filter hook input priority 0; policy accept; }\nadd chain "
              + TABLE
              + " output { type filter hook output priority 0; policy accept; }\n");
    }
  }

  private void addNamespace(String ns) throws IOException, InterruptedException {
    ip("netns", "add", ns);
    namespaces.add(ns);
  }

  /** The first /24 of 198.18.0.0/15 that no address of this namespace is in. */
  private static String freeNetwork() throws IOException, InterruptedException {
    Set<Integer> used = new HashSet<>();
    Matcher m = USED_NETWORK.matcher(output(List.of(tool("ip"), "-4", "-o", "addr", "show")));
    while (m.find()) {
      used.add((Integer.parseInt(m.group(1)) - 18) * 256 + Integer.parseInt(m.group(2)));
    }
    int start = (int) (ProcessHandle.current().pid() % 512);
    for (int i = 0; i < 512; i++) {
      int k = (start + i) % 512;
      if (!used.contains(k)) {
        return "198." + (18 + k / 256) + "." + (k % 256);
      }
    }
    throw new IOException("every /24 of 198.18.0.0/15 is in use on this machine");
  }

  /** The network namespace of a host ({@code pg}, {@code w0}, ...). */
  String namespace(String host) {
    return run + host;
  }

  /** The namespaces this run made, the hub's first. */
  List<String> namespaces() {
    return List.copyOf(namespaces);
  }

  /** The address of the harness on the run's network (the workers' proxy listens there). */
  String harness() {
    return network + ".1";
  }

  /** The database host's address. */
  String database() {
    return address(DATABASE);
  }

  /** Worker {@code i}'s address. */
  String worker(int i) {
    return address("w" + i);
  }

  /** The run's network, as PostgreSQL's {@code pg_hba.conf} names it. */
  String cidr() {
    return network + ".0/24";
  }

  private String address(String host) {
    return network + "." + (host.equals(DATABASE) ? 2 : 10 + Integer.parseInt(host.substring(1)));
  }

  /** The words that run a command on a host: {@code ip netns exec <namespace>}. */
  List<String> exec(String host) {
    return List.of(tool("ip"), "netns", "exec", namespace(host));
  }

  /** Drops a worker host's traffic in one direction or both, until {@link #heal}. */
  void partition(int worker, Direction direction) throws IOException, InterruptedException {
    StringBuilder rules = new StringBuilder();
    if (direction != Direction.INBOUND) {
      rules.append("add rule ").append(TABLE).append(" output oifname \"eth0\" counter drop\n");
    }
    if (direction != Direction.OUTBOUND) {
      rules.append("add rule ").append(TABLE).append(" input iifname \"eth0\" counter drop\n");
    }
    nft("w" + worker, rules.toString());
  }

  /**
   * Drops {@code percent} % of a worker host's packets at random, each way, until {@link #heal}.
   */
  void loss(int worker, int percent) throws IOException, InterruptedException {
    if (percent < 1 || percent > 99) {
      throw new IllegalArgumentException("loss must be 1-99 %, was " + percent);
    }
    String drop = " numgen random mod 100 < " + percent + " counter drop\n";
    nft(
        "w" + worker,
        "add rule "
            + TABLE
            + " output oifname \"eth0\""
            + drop
            + "add rule "
            + TABLE
            + " input iifname \"eth0\""
            + drop);
  }

  /** Removes every fault rule from a worker host. */
  void heal(int worker) throws IOException, InterruptedException {
    nft("w" + worker, "flush chain " + TABLE + " input\nflush chain " + TABLE + " output\n");
  }

  /** The fault rules of a host now, as {@code nft list table} prints them. */
  String rules(String host) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(exec(host));
    command.addAll(List.of(tool("nft"), "list", "table", "inet", "relayfx"));
    return output(command);
  }

  private void nft(String host, String script) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(exec(host));
    command.addAll(List.of(tool("nft"), "-f", "-"));
    run(command, script);
  }

  /** Kills what still runs in the run's namespaces and deletes them; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<String> reversed = new ArrayList<>(namespaces);
    java.util.Collections.reverse(reversed);
    for (String ns : reversed) {
      remove(ns);
    }
  }

  /**
   * Removes what runs whose harness process is gone left behind: their namespaces (named {@code
   * rfx-<pid>-...}), killing what still runs in them first, and their directories ({@code
   * relay-faults-<pid>-...} in the temporary directory), stopping a server still running on one.
   * Returns how many namespaces it removed.
   */
  static int sweepStale() throws IOException, InterruptedException {
    sweepStaleDirectories();
    if (unavailable() != null) {
      return 0;
    }
    int removed = 0;
    for (String line : output(List.of(tool("ip"), "netns", "list")).split("\n")) {
      String ns = line.strip().split("\\s+")[0];
      Matcher m = RUN_NAME.matcher(ns);
      if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
        remove(ns);
        removed++;
      }
    }
    return removed;
  }

  private static void sweepStaleDirectories() throws IOException {
    Pattern runDir = Pattern.compile("relay-faults-(\\d+)-.*");
    try (var dirs = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      for (Path dir : dirs.toList()) {
        Matcher m = runDir.matcher(dir.getFileName().toString());
        if (!m.matches()
            || !Files.isDirectory(dir)
            || ProcessHandle.of(Long.parseLong(m.group(1))).isPresent()) {
          continue;
        }
        try (var files = Files.walk(dir, 3)) {
          for (Path pidFile :
              files.filter(f -> f.getFileName().toString().equals("postmaster.pid")).toList()) {
            killPostmaster(pidFile);
          }
        }
        Files2.deleteTree(dir);
      }
    }
  }

  /** SIGKILL of the postmaster a pid file names, if that process is still a postgres. */
  private static void killPostmaster(Path pidFile) {
    try {
      long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).strip());
      ProcessHandle.of(pid)
          .filter(p -> p.info().command().map(c -> c.endsWith("postgres")).orElse(false))
          .ifPresent(
              p -> {
                p.children().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
              });
    } catch (IOException | RuntimeException e) {
      // best effort: the file is gone or half written
    }
  }

  /** Kills every process in a namespace (SIGCONT first: a frozen one), then deletes it. */
  private static void remove(String ns) {
    try {
      for (String pid : output(List.of(tool("ip"), "netns", "pids", ns)).split("\\s+")) {
        if (!pid.isBlank()) {
          ProcessHandle.of(Long.parseLong(pid.strip()))
              .ifPresent(
                  p -> {
                    signalQuietly(p.pid(), "CONT");
                    p.destroyForcibly();
                  });
        }
      }
      output(List.of(tool("ip"), "netns", "del", ns));
    } catch (IOException | InterruptedException | NumberFormatException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static void signalQuietly(long pid, String signal) {
    try {
      new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
          .start()
          .waitFor(10, TimeUnit.SECONDS);
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static void ip(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(tool("ip"));
    command.addAll(List.of(args));
    run(command, null);
  }

  private static String output(List<String> command) throws IOException, InterruptedException {
    return run(command, null);
  }

  /** Runs a command (with {@code input} on its standard input, if any); its output, or fails. */
  private static String run(List<String> command, String input)
      throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (input != null) {
      p.getOutputStream().write(input.getBytes(StandardCharsets.UTF_8));
    }
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("timed out: " + String.join(" ", command));
    }
    if (p.exitValue() != 0) {
      throw new IOException(
          "failed (" + p.exitValue() + "): " + String.join(" ", command) + ": " + out.strip());
    }
    return out;
  }

  /** A tool's path: on the PATH, or in /usr/sbin or /sbin (root's tools); null if absent. */
  static String tool(String name) {
    List<String> dirs = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      dirs.addAll(List.of(path.split(":")));
    }
    dirs.addAll(List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin"));
    for (String dir : dirs) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, name);
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT, "hosts %s* on %s.0/24 (%s)", run, network, String.join(", ", hosts));
  }
}
