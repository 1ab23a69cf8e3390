package dev.relay.bench;

import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.nats.NatsRoute;
import dev.relay.transport.nats.NatsTransport;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Publish throughput to NATS JetStream ({@code --nats host:port}): Relay claiming, publishing
 * through {@link NatsTransport} and completing, against the lesser of the raw JetStream client with
 * the same durability (a file-backed stream; every message with {@code Nats-Msg-Id}, the expected
 * stream and the same headers as Relay's, acked) and Relay's own no-op burn-down ({@link
 * PublishComparison}). Each measurement creates its own stream and deletes it afterwards.
 */
final class NatsBench {
  /** The streams' duplicate window, and the route's horizon. */
  static final Duration WINDOW = Duration.ofMinutes(2);

  private final Options options;
  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  NatsBench(String hostPort, RelayBench relay, Sizes sizes, Report report) {
    this.options =
        new Options.Builder()
            .server("nats://" + hostPort)
            .connectionTimeout(Duration.ofSeconds(5))
            .build();
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  void publish() throws Exception {
    PublishComparison.messages(
        report,
        relay,
        sizes,
        "nats",
        () -> withStream(this::raw),
        () ->
            withStream(
                (stream, subject) -> {
                  try (NatsTransport transport =
                      NatsTransport.builder(options)
                          .route(new NatsRoute(RelayBench.KIND, stream, subject, WINDOW))
                          .build()) {
                    transport.start();
                    return PublishComparison.through(relay, sizes, transport);
                  }
                }));
  }

  private interface OnStream {
    double rate(String stream, String subject) throws Exception;
  }

  /** Runs {@code body} on a new file-backed stream, deleted afterwards. */
  private double withStream(OnStream body) throws Exception {
    String id = UUID.randomUUID().toString().replace("-", "");
    String stream = "relay-bench-" + id;
    String subject = "relay-bench." + id;
    Connection c = Nats.connect(options);
    try {
      JetStreamManagement jsm = c.jetStreamManagement();
      jsm.addStream(
          StreamConfiguration.builder()
              .name(stream)
              .subjects(subject)
              .storageType(StorageType.File)
              .duplicateWindow(WINDOW)
              .build());
      try {
        return body.rate(stream, subject);
      } finally {
        jsm.deleteStream(stream);
      }
    } finally {
      c.close();
    }
  }

  /**
   * The raw client: every message published asynchronously at once, timed from the first publish to
   * the last ack. An error ack fails the run.
   */
  private double raw(String stream, String subject) throws Exception {
    Connection c = Nats.connect(options);
    try {
      JetStream js = c.jetStream();
      List<CompletableFuture<PublishAck>> acks = new ArrayList<>(sizes.jobs());
      long t0 = System.nanoTime();
      for (int i = 1; i <= sizes.jobs(); i++) {
        String id = "b-" + i;
        Headers h = new Headers();
        h.add(BrokerHeaders.WORK_ID, id);
        h.add(BrokerHeaders.KIND, RelayBench.KIND);
        h.add(BrokerHeaders.GENERATION, "1");
        PublishOptions po = PublishOptions.builder().messageId(id).expectedStream(stream).build();
        acks.add(
            js.publishAsync(
                subject, h, ("{\"n\": " + i + "}").getBytes(StandardCharsets.UTF_8), po));
      }
      for (CompletableFuture<PublishAck> f : acks) {
        f.get(2, TimeUnit.MINUTES);
      }
      return sizes.jobs() / RelayBench.seconds(t0);
    } finally {
      c.close();
    }
  }
}
