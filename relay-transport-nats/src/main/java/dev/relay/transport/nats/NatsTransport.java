package dev.relay.transport.nats;

import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.InvalidConfigurationException;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import dev.relay.RelayException;
import dev.relay.transport.broker.BrokerAccepted;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.PublishPrologue;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StreamInfo;
import io.nats.client.impl.Headers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A {@link Handler} that publishes work to NATS JetStream and calls it done only after the stream
 * acknowledged it. Build one per process, {@link #start()} it before the workers, register it for
 * every kind it routes, close it at shutdown.
 *
 * <pre>{@code
 * NatsRoute orders = new NatsRoute("order_received", "ORDERS", "orders.received",
 *     Duration.ofMinutes(2));                       // = the stream's duplicate_window
 * NatsTransport nats = NatsTransport.builder(new Options.Builder()
 *         .server("nats://127.0.0.1:4222").build())
 *     .route(orders)
 *     .build();
 * nats.start();                                     // checks each horizon against its stream
 * Relay relay = Relay.builder(dataSource)
 *     .handle(orders.kind(), orders.policy(KindPolicy.DEFAULT), nats)
 *     .build();
 * }</pre>
 *
 * <p>Every message carries {@code Nats-Msg-Id} = the work ID (the same on every attempt and
 * redrive), so the stream drops a repeat that arrives within its duplicate window and answers it
 * with the first message's sequence; and the {@link BrokerHeaders} (work ID, kind, generation,
 * ordering headers; fencing with {@link Builder#fencing}). The publish names the route's stream as
 * expected, so a subject captured by another stream is refused, not stored there.
 *
 * <p>{@link #start()} reads each route's stream from the server and refuses ({@link
 * DedupWindowException}, naming both values) a route whose {@link NatsRoute#dedupHorizon()} is
 * longer than the stream's {@code duplicate_window}: Relay's retries and redrives stay inside the
 * horizon, so every repeat it sends is one the stream still recognises. Told the workers' lease
 * ({@link Builder#workerTimings}), it also refuses a horizon shorter than the lease plus the poll
 * interval: the takeover of a dead worker's claim comes that late, and Relay's claim fails work
 * past its horizon ({@code horizon_passed}) instead of publishing it again. {@code Relay.build()}
 * refuses the same for the route's {@link NatsRoute#policy policy}.
 *
 * <table>
 *   <caption>What JetStream says and what it becomes</caption>
 *   <tr><th>JetStream</th><th>Outcome</th></tr>
 *   <tr><td>publish ack</td><td>done, {@value BrokerAccepted#MILESTONE} (stored as milestone
 *       accepted, the result naming stream and sequence; receiver reference
 *       {@code stream:sequence})</td></tr>
 *   <tr><td>publish ack marked duplicate</td><td>done, the same, with {@code "duplicate":true}:
 *       an earlier attempt was stored</td></tr>
 *   <tr><td>an API error (wrong stream, stream full, ...), no responders (no stream captures the
 *       subject)</td><td>retry, not delivered</td></tr>
 *   <tr><td>no ack within the publish timeout or the run time left, connection lost</td><td>retry,
 *       effect unknown</td></tr>
 *   <tr><td>not connected (not started, closed)</td><td>retry, not delivered</td></tr>
 *   <tr><td>message over the server's {@code max_payload}</td><td>failed, not delivered, both
 *       sizes as evidence</td></tr>
 * </table>
 *
 * <p>It is a {@link BatchHandler}: Relay hands it the buffered claims of a kind together (up to
 * {@link #maxBatchSize()}, 100, per call, in one handler slot), and {@link #publishAll} publishes
 * the whole batch asynchronously before waiting, answering per item. Waits are bounded by the
 * publish timeout and each claim's {@link Claim#runTimeRemaining()}. Thread-safe.
 *
 * <p>What it does not do: JetStream deduplicates only inside the duplicate window; a consumer that
 * must recognise repeats for longer needs Relay's inbox (the {@code BrokerInbox}) with a retention
 * at least as long as the horizon. An ack says the stream stored the message, not that any consumer
 * read it. It creates no stream.
 */
public final class NatsTransport implements BatchHandler, AutoCloseable {
  /** Default longest wait for a publish ack: 10 s. */
  public static final Duration DEFAULT_PUBLISH_TIMEOUT = Duration.ofSeconds(10);

  private final Options options;
  private final PublishPrologue<NatsRoute> prologue;
  private final Duration lease;
  private final Duration pollInterval;
  private volatile Connection connection;
  private volatile JetStream jetStream;

  private NatsTransport(
      Options options, PublishPrologue<NatsRoute> prologue, Duration lease, Duration pollInterval) {
    this.options = options;
    this.prologue = prologue;
    this.lease = lease;
    this.pollInterval = pollInterval;
  }

  /** A builder on the client's connection options (servers, credentials, reconnects). */
  public static Builder builder(Options options) {
    return new Builder(Objects.requireNonNull(options, "options"));
  }

  /** Configures a {@link NatsTransport}; validated at {@link #build()}. */
  public static final class Builder {
    private final Options options;
    private final PublishPrologue.Builder<NatsRoute> prologue =
        PublishPrologue.builder("NATS", "publishTimeout", DEFAULT_PUBLISH_TIMEOUT);
    private Duration lease;
    private Duration pollInterval;

    private Builder(Options options) {
      this.options = options;
    }

    /** Adds (or replaces) the route of {@code route.kind()}. */
    public Builder route(NatsRoute route) {
      prologue.route(route.kind(), route);
      return this;
    }

    /**
     * The most claims Relay hands this transport in one call, published together (1 to 1000,
     * default 100): {@link BatchHandler#maxBatchSize()}.
     */
    public Builder maxBatchSize(int maxBatchSize) {
      prologue.maxBatchSize(maxBatchSize);
      return this;
    }

    /** The longest wait for a publish ack (1 ms to 10 min; also capped by the run time left). */
    public Builder publishTimeout(Duration timeout) {
      prologue.timeout(timeout);
      return this;
    }

    /**
     * A fencing token for each message, from the resource's own counter; without it, messages carry
     * no fencing headers.
     */
    public Builder fencing(Function<Claim, BrokerHeaders.Fencing> fencing) {
      prologue.fencing(fencing);
      return this;
    }

    /**
     * The lease and poll interval of the Relay that runs this transport's kinds ({@link
     * dev.relay.Relay.Builder#lease}, {@link dev.relay.Relay.Builder#pollInterval}). A worker that
     * dies right after the stream acknowledged is replaced only after its lease and up to one poll
     * more; {@link NatsTransport#start()} then also refuses a route whose horizon (and so its
     * stream's window) is shorter than that, since the takeover would always come after the stream
     * forgot the ID (and Relay's claim would fail the work, {@code horizon_passed}). Not checked
     * unless set.
     */
    public Builder workerTimings(Duration lease, Duration pollInterval) {
      if (lease == null || lease.isNegative() || lease.isZero()) {
        throw new InvalidConfigurationException("lease", "must be positive, was " + lease);
      }
      if (pollInterval == null || pollInterval.isNegative()) {
        throw new InvalidConfigurationException(
            "pollInterval", "must be zero or more, was " + pollInterval);
      }
      this.lease = lease;
      this.pollInterval = pollInterval;
      return this;
    }

    /** Validates and builds; {@link NatsTransport#start()} connects. */
    public NatsTransport build() {
      return new NatsTransport(options, prologue.build(), lease, pollInterval);
    }
  }

  /** The kinds this transport routes. */
  public Set<String> kinds() {
    return prologue.kinds();
  }

  /**
   * Connects and checks every route against its stream, as the server reports it. On any refusal
   * the connection is closed again and nothing was published.
   *
   * @throws DedupWindowException if a route's horizon exceeds its stream's duplicate window
   * @throws InvalidConfigurationException if a route's stream does not exist, or its horizon is
   *     shorter than the {@link Builder#workerTimings lease plus the poll interval}
   * @throws RelayException if the server cannot be reached or asked
   */
  public synchronized void start() {
    if (connection != null) {
      return;
    }
    Connection c;
    try {
      c = Nats.connect(options);
    } catch (IOException e) {
      throw new RelayException("cannot connect to NATS: " + e.getMessage(), null, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RelayException("interrupted while connecting to NATS", null, e);
    }
    try {
      JetStreamManagement jsm = c.jetStreamManagement();
      for (String kind : prologue.kinds()) {
        NatsRoute r = prologue.route(kind);
        StreamInfo info;
        try {
          info = jsm.getStreamInfo(r.stream());
        } catch (JetStreamApiException e) {
          throw new InvalidConfigurationException(
              "stream",
              "of kind " + r.kind() + ": stream " + r.stream() + " is not readable: " + e);
        }
        Duration window = info.getConfiguration().getDuplicateWindow();
        if (window == null || r.dedupHorizon().compareTo(window) > 0) {
          throw new DedupWindowException(r.kind(), r.stream(), r.dedupHorizon(), window);
        }
        if (lease != null && r.dedupHorizon().compareTo(lease.plus(pollInterval)) < 0) {
          throw new InvalidConfigurationException(
              "dedupHorizon",
              "of kind "
                  + r.kind()
                  + ": the route's horizon ("
                  + r.dedupHorizon()
                  + ", within stream "
                  + r.stream()
                  + "'s duplicate_window "
                  + window
                  + ") is shorter than the lease ("
                  + lease
                  + ") plus the pollInterval ("
                  + pollInterval
                  + "): a worker that dies after the stream acknowledged is replaced only then,"
                  + " after the stream forgot the message ID. Lengthen the duplicate window and"
                  + " the horizon, or shorten the lease");
        }
      }
      this.jetStream = c.jetStream();
      this.connection = c;
    } catch (IOException e) {
      closeQuietly(c);
      throw new RelayException("cannot read the streams from NATS: " + e.getMessage(), null, e);
    } catch (RuntimeException e) {
      closeQuietly(c);
      throw e;
    }
  }

  /** The most claims per {@link #handleAll} call ({@link Builder#maxBatchSize}). */
  @Override
  public int maxBatchSize() {
    return prologue.maxBatchSize();
  }

  /** Publishes a claim batch the runtime hands over: {@link #publishAll}. */
  @Override
  public List<Outcome> handleAll(List<? extends Claim> claims) {
    return publishAll(claims);
  }

  /**
   * Publishes every claim asynchronously, then waits for the acks: one outcome per claim, in order.
   * No exception for a broker problem; each item says what became of it.
   *
   * @param claims the claims, of kinds this transport routes
   * @return the outcomes, in the order of {@code claims}
   */
  public List<Outcome> publishAll(List<? extends Claim> claims) {
    Outcome[] out = new Outcome[claims.size()];
    List<Sent> sent = new ArrayList<>(claims.size());
    Connection c = connection;
    JetStream js = jetStream;
    for (int i = 0; i < claims.size(); i++) {
      Claim claim = claims.get(i);
      NatsRoute route = prologue.route(claim.kind());
      if (route == null) {
        out[i] = prologue.unrouted(claim.kind());
        continue;
      }
      if (c == null || js == null) {
        out[i] = Outcome.retry("the NATS transport is not started; not sent", Effect.NOT_DELIVERED);
        continue;
      }
      Duration bound = prologue.waitBound(claim);
      if (bound == null) {
        out[i] = PublishPrologue.runTimeOver();
        continue;
      }
      byte[] body = claim.payload().getBytes(StandardCharsets.UTF_8);
      Headers headers = new Headers();
      prologue.headers(claim).forEach(headers::add);
      long size = body.length + headers.serializedLength();
      if (size > c.getMaxPayload()) {
        out[i] =
            Outcome.fail(
                "message is "
                    + size
                    + " bytes (payload and headers), over the server's max_payload of "
                    + c.getMaxPayload()
                    + " bytes; not sent",
                Effect.NOT_DELIVERED);
        continue;
      }
      PublishOptions po =
          PublishOptions.builder().messageId(claim.workId()).expectedStream(route.stream()).build();
      try {
        CompletableFuture<PublishAck> ack = js.publishAsync(route.subject(), headers, body, po);
        sent.add(new Sent(i, route, ack, System.nanoTime() + bound.toNanos(), bound));
      } catch (IllegalStateException e) {
        out[i] = Outcome.retry("not connected to NATS; not sent: " + e, Effect.NOT_DELIVERED);
      } catch (IllegalArgumentException e) {
        out[i] = Outcome.fail("refused by the client; not sent: " + e, Effect.NOT_DELIVERED);
      }
    }
    for (Sent s : sent) {
      out[s.index] = await(s);
    }
    return Arrays.asList(out);
  }

  private record Sent(
      int index,
      NatsRoute route,
      CompletableFuture<PublishAck> ack,
      long deadlineNanos,
      Duration bound) {}

  private static Outcome await(Sent s) {
    PublishAck ack;
    try {
      ack = s.ack.get(Math.max(0, s.deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      s.ack.cancel(false);
      return Outcome.retry(
          "no publish ack from JetStream within " + s.bound + "; effect unknown", Effect.UNKNOWN);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Outcome.retry("interrupted while awaiting the publish ack", Effect.UNKNOWN);
    } catch (ExecutionException e) {
      return failed(e.getCause());
    }
    Map<String, Object> where = new LinkedHashMap<>();
    where.put("stream", ack.getStream());
    where.put("sequence", ack.getSeqno());
    where.put("subject", s.route.subject());
    where.put("duplicate", ack.isDuplicate());
    return BrokerAccepted.outcome("nats", ack.getStream() + ":" + ack.getSeqno(), where);
  }

  private static Outcome failed(Throwable cause) {
    if (cause instanceof JetStreamApiException api) {
      // The stream answered with an error: it did not store the message.
      return Outcome.retry(
          "refused by JetStream: "
              + api.getErrorDescription()
              + " (code "
              + api.getApiErrorCode()
              + ")",
          Effect.NOT_DELIVERED);
    }
    String text = String.valueOf(cause);
    if (text.contains("No Responders") || text.contains("503")) {
      return Outcome.retry(
          "no stream captures the subject (no responders); not stored: " + text,
          Effect.NOT_DELIVERED);
    }
    return Outcome.retry("publish failed, effect unknown: " + text, Effect.UNKNOWN);
  }

  /** Closes the connection; publishes still awaiting an ack end "effect unknown". */
  @Override
  public synchronized void close() {
    Connection c = connection;
    connection = null;
    jetStream = null;
    if (c != null) {
      closeQuietly(c);
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
