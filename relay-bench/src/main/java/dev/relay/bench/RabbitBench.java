package dev.relay.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.rabbitmq.RabbitRoute;
import dev.relay.transport.rabbitmq.RabbitTransport;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Publish throughput to RabbitMQ ({@code --rabbitmq host:port}): Relay claiming, publishing through
 * {@link RabbitTransport} and completing, against the lesser of the raw client with the same
 * durability (persistent messages, {@code mandatory}, publisher confirms, to a durable queue) and
 * Relay's own no-op burn-down ({@link PublishComparison}). Each measurement declares its own
 * durable queue and deletes it afterwards.
 */
final class RabbitBench {
  private final ConnectionFactory factory;
  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  RabbitBench(
      String hostPort, String user, String password, RelayBench relay, Sizes sizes, Report report) {
    ConnectionFactory f = new ConnectionFactory();
    int colon = hostPort.lastIndexOf(':');
    f.setHost(colon < 0 ? hostPort : hostPort.substring(0, colon));
    f.setPort(
        colon < 0
            ? ConnectionFactory.DEFAULT_AMQP_PORT
            : Integer.parseInt(hostPort.substring(colon + 1)));
    f.setUsername(user);
    f.setPassword(password);
    this.factory = f;
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  void publish() throws Exception {
    PublishComparison.messages(
        report,
        relay,
        sizes,
        "rabbitmq",
        () -> withQueue(this::raw),
        () ->
            withQueue(
                queue -> {
                  try (RabbitTransport transport =
                      RabbitTransport.builder(factory)
                          .route(RabbitRoute.toQueue(RelayBench.KIND, queue))
                          .build()) {
                    return PublishComparison.through(relay, sizes, transport);
                  }
                }));
  }

  private interface OnQueue {
    double rate(String queue) throws Exception;
  }

  /** Runs {@code body} on a new durable queue, deleted afterwards. */
  private double withQueue(OnQueue body) throws Exception {
    String queue = "relay-bench-" + UUID.randomUUID();
    try (Connection c = factory.newConnection("relay-bench-admin")) {
      Channel ch = c.createChannel();
      ch.queueDeclare(queue, true, false, false, null);
      try {
        return body.rate(queue);
      } finally {
        ch.queueDelete(queue);
      }
    }
  }

  /**
   * The raw client: one channel in confirm mode, every message published at once (persistent,
   * mandatory, message-id and the same headers as Relay's), timed from the first publish to the
   * last confirm. A returned or nacked message fails the run.
   */
  private double raw(String queue) throws Exception {
    try (Connection c = factory.newConnection("relay-bench-raw")) {
      Channel ch = c.createChannel();
      ch.confirmSelect();
      AtomicInteger returned = new AtomicInteger();
      ch.addReturnListener(r -> returned.incrementAndGet());
      long t0 = System.nanoTime();
      for (int i = 1; i <= sizes.jobs(); i++) {
        String id = "b-" + i;
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put(BrokerHeaders.WORK_ID, id);
        headers.put(BrokerHeaders.KIND, RelayBench.KIND);
        headers.put(BrokerHeaders.GENERATION, "1");
        AMQP.BasicProperties props =
            new AMQP.BasicProperties.Builder()
                .messageId(id)
                .type(RelayBench.KIND)
                .contentType("application/json")
                .contentEncoding("UTF-8")
                .deliveryMode(2)
                .headers(headers)
                .build();
        ch.basicPublish(
            "", queue, true, props, ("{\"n\": " + i + "}").getBytes(StandardCharsets.UTF_8));
      }
      ch.waitForConfirmsOrDie(120_000);
      double rate = sizes.jobs() / RelayBench.seconds(t0);
      if (returned.get() > 0) {
        throw new IllegalStateException(returned.get() + " messages returned as unroutable");
      }
      return rate;
    }
  }
}
