package dev.relay.docs;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.relay.KindPolicy;
import dev.relay.Relay;
import dev.relay.transport.broker.BrokerInbox;
import dev.relay.transport.nats.NatsRoute;
import dev.relay.transport.nats.NatsTransport;
import dev.relay.transport.rabbitmq.RabbitInbox;
import dev.relay.transport.rabbitmq.RabbitRoute;
import dev.relay.transport.rabbitmq.RabbitTransport;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Options;
import io.nats.client.PullSubscribeOptions;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;

/** The RabbitMQ and NATS JetStream code of docs/transports.md (its last two sections). */
final class BrokerSnippets {
  private BrokerSnippets() {}

  /** The consumer's own write. */
  static void recordOrder(Connection tx, String payload) {}

  static Relay rabbitPublish(DataSource dataSource) {
    // docs:begin rabbitmq-publish
    ConnectionFactory amqp = new ConnectionFactory();
    amqp.setHost("127.0.0.1");                         // port, credentials, vhost as usual
    RabbitTransport rabbit = RabbitTransport.builder(amqp)
        .route(new RabbitRoute("order_placed", "orders", "order.placed"))
        .maxMessageBytes(16 << 20)                     // = the broker's max_message_size
        .build();                                      // connects on first use
    Relay relay = Relay.builder(dataSource)
        .handle("order_placed", KindPolicy.DEFAULT.withMaxRunTime(Duration.ofSeconds(30)), rabbit)
        .build();                                      // batches of up to 100 per slot
    relay.start();                                     // on shutdown: relay.close(); rabbit.close();
    // docs:end
    return relay;
  }

  static void rabbitConsume(DataSource dataSource, Channel channel) throws Exception {
    // docs:begin rabbitmq-consume
    BrokerInbox inbox = BrokerInbox.builder(dataSource).consumer("billing").build();
    RabbitInbox billing = RabbitInbox.of(inbox,
        (tx, delivery) -> recordOrder(tx, delivery.payload()));  // writes on tx only
    billing.consume(channel, "orders.billing", 50);    // manual acks after commit, 50 unacked
    // docs:end
  }

  static Relay natsPublish(DataSource dataSource) {
    // docs:begin nats-publish
    NatsRoute placed = new NatsRoute("order_placed", "ORDERS", "orders.placed",
        Duration.ofMinutes(2));                        // <= the stream's duplicate_window
    NatsTransport nats = NatsTransport.builder(
            new Options.Builder().server("nats://127.0.0.1:4222").build())
        .route(placed)
        .build();
    nats.start();                                      // reads ORDERS; refuses a longer horizon
    Relay relay = Relay.builder(dataSource)
        .handle(placed.kind(), placed.policy(KindPolicy.DEFAULT), nats)  // retries <= 2 min
        .build();
    relay.start();                                     // on shutdown: relay.close(); nats.close();
    // docs:end
    return relay;
  }

  static void natsConsume(io.nats.client.Connection nc, BrokerInbox inbox) throws Exception {
    // docs:begin nats-consume
    JetStreamSubscription sub = nc.jetStream().subscribe("orders.placed",
        PullSubscribeOptions.builder().stream("ORDERS").durable("billing").build());
    for (Message m : sub.fetch(100, Duration.ofSeconds(1))) {
      try {
        inbox.apply(name -> m.getHeaders().getFirst(name),
            new String(m.getData(), StandardCharsets.UTF_8),
            (tx, delivery) -> recordOrder(tx, delivery.payload()));
        m.ack();                                       // after the commit
      } catch (RuntimeException e) {
        if (BrokerInbox.isPoison(e)) {
          m.term();                                    // can never apply: stop redelivering
        } else {
          m.nak();                                     // rolled back: redeliver
        }
      }
    }
    // docs:end
  }
}
