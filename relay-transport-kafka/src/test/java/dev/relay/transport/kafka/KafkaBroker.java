package dev.relay.transport.kafka;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

/**
 * A real single-node Kafka broker (KRaft, broker and controller in one process) run from Kafka's
 * own jars on the test class path as a child JVM: bound to 127.0.0.1 on free ports, with a
 * temporary log directory, so a test can kill it and start it again on the same data.
 */
final class KafkaBroker implements AutoCloseable {
  private final Path dir;
  private final Path logDir;
  private final Path config;
  private final int port;
  private Process process;
  private int starts;

  private KafkaBroker() throws IOException {
    this.dir = Files.createTempDirectory("relay-kafka-");
    this.logDir = dir.resolve("data");
    this.config = dir.resolve("server.properties");
    this.port = freePort();
    int controllerPort = freePort();
    Properties p = new Properties();
    p.setProperty("process.roles", "broker,controller");
    p.setProperty("node.id", "1");
    p.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
    p.setProperty(
        "listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
    p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
    p.setProperty("controller.listener.names", "CONTROLLER");
    p.setProperty("inter.broker.listener.name", "PLAINTEXT");
    p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.setProperty("log.dirs", logDir.toString());
    p.setProperty("num.partitions", "4");
    p.setProperty("auto.create.topics.enable", "false");
    p.setProperty("offsets.topic.replication.factor", "1");
    p.setProperty("offsets.topic.num.partitions", "4");
    p.setProperty("transaction.state.log.replication.factor", "1");
    p.setProperty("transaction.state.log.min.isr", "1");
    p.setProperty("share.coordinator.state.topic.replication.factor", "1");
    p.setProperty("share.coordinator.state.topic.min.isr", "1");
    p.setProperty("group.initial.rebalance.delay.ms", "0");
    p.setProperty("log.flush.interval.messages", "1000000");
    try (var out = Files.newBufferedWriter(config)) {
      p.store(out, "Relay test broker");
    }
  }

  /** Formats a new log directory and starts the broker; returns once it serves requests. */
  static KafkaBroker start() throws Exception {
    KafkaBroker b = new KafkaBroker();
    b.run(
            "kafka.tools.StorageTool",
            List.of("format", "-t", Uuid.randomUuid().toString(), "-c", b.config.toString()),
            "format.log")
        .waitFor(120, TimeUnit.SECONDS);
    b.restart();
    return b;
  }

  /** The bootstrap address. */
  String bootstrap() {
    return "127.0.0.1:" + port;
  }

  /** Client settings reaching this broker. */
  Map<String, Object> client() {
    return Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
  }

  /** Starts the broker (again) on the same log directory and ports; waits until it serves. */
  void restart() throws Exception {
    starts++;
    process = run("kafka.Kafka", List.of(config.toString()), "server-" + starts + ".log");
    try (Admin admin = Admin.create(adminConfig())) {
      await()
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(200))
          .ignoreExceptions()
          .until(
              () -> {
                if (!process.isAlive()) {
                  throw new AssertionError("the broker exited: see " + dir);
                }
                return admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).size() == 1
                    && admin.listTopics().names().get(5, TimeUnit.SECONDS) != null;
              });
    }
  }

  /** Kills the broker at once (SIGKILL): no clean shutdown. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(60, TimeUnit.SECONDS);
  }

  /** Creates a topic with {@code partitions} partitions and the given topic configs. */
  void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
    try (Admin admin = Admin.create(adminConfig())) {
      admin
          .createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
          .all()
          .get(60, TimeUnit.SECONDS);
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(
              () ->
                  admin
                      .describeTopics(List.of(name))
                      .allTopicNames()
                      .get(5, TimeUnit.SECONDS)
                      .get(name)
                      .partitions()
                      .stream()
                      .allMatch(pi -> pi.leader() != null && !pi.leader().isEmpty()));
      // The leader in the metadata is not yet a leader that takes writes: a list-offsets request
      // is answered only by a broker that has applied its leadership. Producing before that can
      // leave an idempotent producer stuck on OUT_OF_ORDER_SEQUENCE_NUMBER (KAFKA-15591).
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int p = 0; p < partitions; p++) {
        latest.put(new TopicPartition(name, p), OffsetSpec.latest());
      }
      admin.listOffsets(latest).all().get(60, TimeUnit.SECONDS);
    }
  }

  private Map<String, Object> adminConfig() {
    return Map.of(
        AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
        bootstrap(),
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
        5000,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
        10000);
  }

  private Process run(String mainClass, List<String> args, String logName) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xms128m");
    cmd.add("-Xmx512m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-Djava.awt.headless=true");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve(logName).toFile())
        .start();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() throws IOException {
    if (process != null) {
      process.destroyForcibly();
      try {
        process.waitFor(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(KafkaBroker::delete);
    }
  }

  private static void delete(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
