package dev.relay.transport.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.relay.Outbox;
import dev.relay.Work;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * The machine's RabbitMQ (127.0.0.1:5672, guest/guest) for one test: a connection for setup and
 * checks, and uniquely named queues that {@link #close()} deletes.
 */
final class Broker implements AutoCloseable {
  private final Connection admin;
  private final Channel channel;
  private final List<String> queues = new ArrayList<>();

  Broker() throws IOException, TimeoutException {
    this.admin = factory().newConnection("relay-test-admin");
    this.channel = admin.createChannel();
  }

  static ConnectionFactory factory() {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost("127.0.0.1");
    f.setPort(5672);
    f.setUsername("guest");
    f.setPassword("guest");
    return f;
  }

  /** Declares a durable queue with a unique name, deleted by {@link #close()}. */
  String queue(String purpose) throws IOException {
    String name = "relay-test-" + purpose + "-" + UUID.randomUUID();
    channel.queueDeclare(name, true, false, false, null);
    queues.add(name);
    return name;
  }

  /** A name no queue has, so the default exchange routes nothing there. */
  static String missingQueue() {
    return "relay-test-missing-" + UUID.randomUUID();
  }

  long messageCount(String queue) throws IOException {
    return channel.messageCount(queue);
  }

  Channel channel() {
    return channel;
  }

  Connection newConnection(String name) throws IOException, TimeoutException {
    return factory().newConnection(name);
  }

  /** Enqueues work in one transaction. */
  static void enqueue(DataSource ds, String schema, List<Work> work) throws SQLException {
    Outbox outbox = Outbox.builder().schema(schema).maxPayloadBytes(4 << 20).build();
    try (java.sql.Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      for (int from = 0; from < work.size(); from += 1000) {
        outbox.enqueueAll(c, work.subList(from, Math.min(work.size(), from + 1000)));
      }
      c.commit();
      c.setAutoCommit(true);
    }
  }

  /** Runs {@code rabbitmqctl} with these arguments; fails on a non-zero exit. */
  static String rabbitmqctl(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add("rabbitmqctl");
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("rabbitmqctl did not finish: " + cmd);
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new IllegalStateException("rabbitmqctl failed: " + cmd + "\n" + out);
    }
    return out;
  }

  @Override
  public void close() throws IOException, TimeoutException {
    for (String q : queues) {
      channel.queueDelete(q);
    }
    admin.close();
  }
}
