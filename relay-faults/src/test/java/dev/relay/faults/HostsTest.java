package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fault suite's hosts as a person on the machine would check them: PostgreSQL in a network
 * namespace of its own listens only on its veth address, no host has a default route, the nftables
 * partitions drop the direction they name and heal, and nothing of a run is left once it ends, also
 * when its harness was killed. Skipped without root, {@code ip} and {@code nft}; {@code .ci/run}
 * fails on CI when it was skipped.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class HostsTest {
  private static Path parent;
  private static Hosts hosts;
  private static PgCluster pg;

  @BeforeAll
  static void start() throws Exception {
    assumeTrue(Hosts.unavailable() == null, Hosts.unavailable());
    parent = Files.createTempDirectory("relay-faults-" + ProcessHandle.current().pid() + "-");
    hosts = Hosts.create(2);
    pg =
        PgCluster.start(
            parent,
            new PgCluster.Placement(
                hosts.database(), hosts.exec(Hosts.DATABASE), hosts.cidr(), Map.of()));
  }

  @AfterAll
  static void stop() {
    if (pg != null) {
      pg.close();
    }
    if (hosts != null) {
      hosts.close();
    }
    Files2.deleteTree(parent);
  }

  @Test
  void theDatabaseListensOnlyOnItsHostAddressAndNoHostHasADefaultRoute() throws Exception {
    try (Connection c = DriverManager.getConnection(pg.jdbcUrl());
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT inet_server_addr()::text, current_setting('listen_addresses')")) {
      r.next();
      assertThat(r.getString(1)).startsWith(hosts.database());
      assertThat(r.getString(2)).isEqualTo(hosts.database());
    }
    // Its listening sockets, as the database host's own `ss` lists them: one address.
    String listening = run(hosts.exec(Hosts.DATABASE), Hosts.tool("ss"), "-Hltn").output();
    assertThat(listening).contains(hosts.database() + ":" + pg.port());
    assertThat(listening).doesNotContain("127.0.0.1:" + pg.port(), "0.0.0.0:" + pg.port());
    assertThat(connects(Hosts.DATABASE, "127.0.0.1", pg.port())).as("loopback").isFalse();
    assertThat(connects("w0", hosts.database(), pg.port())).as("from w0").isTrue();
    assertThat(connects("w1", hosts.database(), pg.port())).as("from w1").isTrue();
    for (String host : List.of(Hosts.DATABASE, "w0", "w1")) {
      List<String> routes = new ArrayList<>(hosts.exec(host));
      routes.addAll(List.of(Hosts.tool("ip"), "-4", "route", "show"));
      assertThat(run(routes).output().strip())
          .as(host + "'s routes")
          .isEqualTo(hosts.cidr() + " dev eth0 proto kernel scope link src " + address(host));
    }
  }

  @Test
  void aOneWayPartitionDropsTheDirectionItNamesAndHeals() throws Exception {
    // Outbound: w0's SYN never leaves. Inbound: the SYN reaches the database, its answer is
    // dropped on the way in. Either way w0 cannot connect; the counters tell which rule dropped.
    hosts.partition(0, Hosts.Direction.OUTBOUND);
    assertThat(connects("w0", hosts.database(), pg.port())).isFalse();
    assertThat(dropped("w0", "output")).isPositive();
    assertThat(dropped("w0", "input")).isZero();
    assertThat(connects("w1", hosts.database(), pg.port())).as("w1 is not cut").isTrue();
    hosts.heal(0);
    assertThat(connects("w0", hosts.database(), pg.port())).as("healed").isTrue();

    hosts.partition(0, Hosts.Direction.INBOUND);
    assertThat(connects("w0", hosts.database(), pg.port())).isFalse();
    assertThat(dropped("w0", "input")).isPositive();
    assertThat(dropped("w0", "output")).isZero();
    hosts.heal(0);
    assertThat(connects("w0", hosts.database(), pg.port())).as("healed").isTrue();
  }

  @Test
  void aPartitionBothWaysCutsTheHostOffButNotTheHarness() throws Exception {
    hosts.partition(1, Hosts.Direction.BOTH);
    assertThat(connects("w1", hosts.database(), pg.port())).isFalse();
    assertThat(connects("w1", hosts.harness(), 9)).isFalse();
    try (Connection c = DriverManager.getConnection(pg.jdbcUrl())) {
      assertThat(c.isValid(30)).as("the harness still reaches the database").isTrue();
    }
    hosts.heal(1);
    assertThat(connects("w1", hosts.database(), pg.port())).isTrue();
  }

  @Test
  void packetLossIsARandomDropEachWayUntilHealed() throws Exception {
    hosts.loss(0, 25);
    String rules = hosts.rules("w0");
    assertThat(rules).contains("oifname \"eth0\" numgen random mod 100 < 25");
    assertThat(rules).contains("iifname \"eth0\" numgen random mod 100 < 25");
    hosts.heal(0);
    assertThat(hosts.rules("w0")).doesNotContain("numgen", "drop");
  }

  @Test
  void aRunsNamespacesAreGoneAfterCloseAndAfterItsHarnessWasKilled() throws Exception {
    Hosts own = Hosts.create(1);
    try {
      assertThat(namespaces()).containsAll(own.namespaces());
    } finally {
      own.close();
    }
    assertThat(namespaces()).doesNotContainAnyElementsOf(own.namespaces());

    // A harness killed with SIGKILL while its run is up: its PostgreSQL and worker still run in
    // the namespaces it made. The next run's sweep removes them.
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path log = Files.createTempFile(parent, "crashed-harness-", ".log");
    Process harness =
        new ProcessBuilder(
                java,
                "-Xmx256m",
                "-cp",
                System.getProperty("java.class.path"),
                FaultsCommand.class.getName(),
                "--hosts",
                "--seed",
                "3",
                "--minutes",
                "2",
                "--workers",
                "1",
                "--items",
                "50")
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    String prefix = Hosts.PREFIX + harness.pid() + "-";
    try {
      await("the killed harness's worker runs on its host")
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> hasProcesses(prefix, "w0") && hasProcesses(prefix, "pg"));
    } finally {
      harness.destroyForcibly();
      harness.waitFor(30, TimeUnit.SECONDS);
    }
    List<String> left = namespaces().stream().filter(n -> n.startsWith(prefix)).toList();
    assertThat(left).as("what the crash left").hasSize(3);
    List<Long> pids = new ArrayList<>();
    for (String ns : left) {
      pids.addAll(pids(ns));
    }
    assertThat(pids).as("processes left in them (PostgreSQL)").isNotEmpty();

    assertThat(Hosts.sweepStale()).isGreaterThanOrEqualTo(3);
    assertThat(namespaces()).noneMatch(n -> n.startsWith(prefix));
    await("every process of the crashed run ends")
        .atMost(Duration.ofMinutes(1))
        .until(() -> pids.stream().noneMatch(p -> ProcessHandle.of(p).isPresent()));
    assertThat(namespaces()).as("this run's own are untouched").containsAll(hosts.namespaces());
    try (var dirs = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      assertThat(dirs.map(d -> d.getFileName().toString()))
          .as("the crashed run's directory")
          .noneMatch(n -> n.startsWith("relay-faults-" + harness.pid() + "-"));
    }
  }

  private static boolean hasProcesses(String prefix, String host) throws Exception {
    return namespaces().contains(prefix + "1-" + host) && !pids(prefix + "1-" + host).isEmpty();
  }

  private static List<Long> pids(String ns) throws Exception {
    List<Long> pids = new ArrayList<>();
    for (String p : run(List.of(Hosts.tool("ip"), "netns", "pids", ns)).output().split("\\s+")) {
      if (!p.isBlank()) {
        pids.add(Long.parseLong(p));
      }
    }
    return pids;
  }

  private static List<String> namespaces() throws Exception {
    return run(List.of(Hosts.tool("ip"), "netns", "list"))
        .output()
        .lines()
        .map(l -> l.strip().split("\\s+")[0])
        .filter(n -> !n.isEmpty())
        .toList();
  }

  private static String address(String host) {
    return host.equals(Hosts.DATABASE)
        ? hosts.database()
        : hosts.worker(Integer.parseInt(host.substring(1)));
  }

  /** Whether a TCP connection from the host to the address opens within a few seconds. */
  private static boolean connects(String host, String address, int port) throws Exception {
    List<String> command = new ArrayList<>(hosts.exec(host));
    command.addAll(
        List.of("timeout", "5", "bash", "-c", "exec 3<>/dev/tcp/" + address + "/" + port));
    return run(command).exit() == 0;
  }

  /** Packets dropped so far by the host's rules in a chain, summed over its counters. */
  private static long dropped(String host, String chain) throws Exception {
    String rules = hosts.rules(host);
    Matcher block =
        Pattern.compile("chain " + chain + " \\{(.*?)\\n\\s*}", Pattern.DOTALL).matcher(rules);
    assertThat(block.find()).as(rules).isTrue();
    Matcher counter = Pattern.compile("counter packets (\\d+)").matcher(block.group(1));
    long n = 0;
    while (counter.find()) {
      n += Long.parseLong(counter.group(1));
    }
    return n;
  }

  private record Ran(int exit, String output) {}

  private static Ran run(List<String> command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    p.getInputStream().transferTo(out);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
    }
    return new Ran(p.exitValue(), out.toString(StandardCharsets.UTF_8));
  }

  private static Ran run(List<String> prefix, String... command)
      throws IOException, InterruptedException {
    List<String> full = new ArrayList<>(prefix);
    full.addAll(List.of(command));
    return run(full);
  }
}
