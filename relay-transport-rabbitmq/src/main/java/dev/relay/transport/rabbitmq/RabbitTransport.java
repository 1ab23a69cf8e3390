package dev.relay.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.InvalidConfigurationException;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import dev.relay.transport.broker.BrokerAccepted;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.PublishPrologue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A {@link Handler} that publishes work to RabbitMQ and calls it done only after the broker
 * confirmed it. Build one per process, register it for every kind it routes, close it at shutdown.
 *
 * <pre>{@code
 * ConnectionFactory amqp = new ConnectionFactory();
 * amqp.setHost("127.0.0.1");
 * RabbitTransport rabbit = RabbitTransport.builder(amqp)
 *     .route(new RabbitRoute("order_received", "orders", "order.received"))
 *     .build();
 * Relay relay = Relay.builder(dataSource).handle("order_received", rabbit).build();
 * }</pre>
 *
 * <p>Every message is persistent (delivery mode 2), {@code mandatory}, has message-id = the work ID
 * (the same on every attempt and redrive), type = the kind, content type {@code application/json},
 * the payload as UTF-8 body, and the {@link BrokerHeaders} as string-valued AMQP headers (work ID,
 * kind, generation, ordering key, sequence and previous sequence; a fencing resource and token with
 * {@link Builder#fencing}). It uses one connection with one channel in confirm mode, opened on
 * first use and replaced after it closes; the client's automatic recovery is switched off on a copy
 * of the factory, so the confirms of a lost channel are never mistaken for a new channel's.
 *
 * <table>
 *   <caption>What the broker says and what it becomes</caption>
 *   <tr><th>Broker</th><th>Outcome</th></tr>
 *   <tr><td>confirmed (ack)</td><td>done, {@value BrokerAccepted#MILESTONE} (stored as milestone
 *       accepted, the result naming the exchange and routing key): the broker took the message; it
 *       says nothing of any consumer</td></tr>
 *   <tr><td>returned (unroutable), then confirmed</td><td>retry, not delivered</td></tr>
 *   <tr><td>nack</td><td>retry, effect unknown</td></tr>
 *   <tr><td>no confirm within the confirm timeout or the run time left</td><td>retry, effect
 *       unknown</td></tr>
 *   <tr><td>the route's exchange does not exist (a passive declare, before the first publish to
 *       it on a channel: one round trip per exchange per channel, not per message)</td><td>retry,
 *       not delivered (nothing was published), the error naming the exchange as a configuration
 *       problem</td></tr>
 *   <tr><td>exchange deleted while publishes are in flight (channel closed with 404
 *       NOT_FOUND)</td><td>retry, effect unknown (earlier messages may have been routed)</td></tr>
 *   <tr><td>connection or channel lost before the confirm</td><td>retry, effect unknown</td></tr>
 *   <tr><td>cannot connect (tried once per batch), channel already closed, connection blocked
 *       by a resource alarm</td><td>retry, not delivered (nothing was sent)</td></tr>
 *   <tr><td>payload over {@link Builder#maxMessageBytes} or the broker's {@code
 *       max_message_size}</td><td>failed, not delivered, with both sizes as evidence</td></tr>
 * </table>
 *
 * <p>It is a {@link BatchHandler}: Relay hands it the buffered claims of a kind together (up to
 * {@link #maxBatchSize()}, 100, per call, in one handler slot), and {@link #publishAll} publishes
 * the whole batch before waiting, so the broker confirms them together (it writes persistent
 * messages to disk in groups); it answers per item: one bad item (too large, unroutable) does not
 * hold the others. Waits are bounded by the confirm timeout and by each claim's {@link
 * Claim#runTimeRemaining()}. Thread-safe.
 *
 * <p>What it does not do: it declares no exchange or queue (it checks, passively, that a route's
 * exchange exists); it cannot tell whether a message whose confirm was lost reached the queue (that
 * attempt is retried, so a consumer may see the work ID twice: use {@link RabbitInbox}); a confirm
 * means the broker (for a durable queue, its disk) has the message, not that any consumer processed
 * it.
 */
public final class RabbitTransport implements BatchHandler, AutoCloseable {
  /** Default longest wait for a confirm: 10 s. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Default largest message body: 16 MiB, RabbitMQ 4's default {@code max_message_size} (3.8 to
   * 3.13 allow 128 MiB). Set it to the broker's value.
   */
  public static final int DEFAULT_MAX_MESSAGE_BYTES = 16 << 20;

  private final ConnectionFactory factory;
  private final PublishPrologue<RabbitRoute> prologue;
  private volatile long maxMessageBytes;
  private final Object sessionLock = new Object();
  private PublishSession session; // guarded by sessionLock
  private boolean closed; // guarded by sessionLock

  private RabbitTransport(Builder b, PublishPrologue<RabbitRoute> prologue) {
    ConnectionFactory f = b.factory.clone();
    f.setAutomaticRecoveryEnabled(false);
    f.setTopologyRecoveryEnabled(false);
    int timeout = (int) Math.min(Integer.MAX_VALUE, prologue.timeout().toMillis());
    if (f.getConnectionTimeout() <= 0 || f.getConnectionTimeout() > timeout) {
      f.setConnectionTimeout(timeout);
    }
    // The exchange check is a round trip too: it waits no longer than a confirm would.
    if (f.getChannelRpcTimeout() <= 0 || f.getChannelRpcTimeout() > timeout) {
      f.setChannelRpcTimeout(timeout);
    }
    this.factory = f;
    this.prologue = prologue;
    this.maxMessageBytes = b.maxMessageBytes;
  }

  /**
   * A builder on {@code factory} (host, port, credentials, virtual host); the transport works on a
   * copy of it.
   */
  public static Builder builder(ConnectionFactory factory) {
    return new Builder(Objects.requireNonNull(factory, "factory"));
  }

  /** Configures a {@link RabbitTransport}; validated at {@link #build()}. */
  public static final class Builder {
    private final ConnectionFactory factory;
    private final PublishPrologue.Builder<RabbitRoute> prologue =
        PublishPrologue.builder("RabbitMQ", "confirmTimeout", DEFAULT_CONFIRM_TIMEOUT);
    private long maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;

    private Builder(ConnectionFactory factory) {
      this.factory = factory;
    }

    /** Adds (or replaces) the route of {@code route.kind()}. */
    public Builder route(RabbitRoute route) {
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

    /** The longest wait for a confirm (1 ms to 10 min; also capped by the run time left). */
    public Builder confirmTimeout(Duration timeout) {
      prologue.timeout(timeout);
      return this;
    }

    /**
     * The largest message body sent, in bytes: the broker's {@code max_message_size}. A larger
     * payload fails, not delivered, without being sent. If the broker's limit is lower, the broker
     * closes the channel on that message; the transport then fails that item the same way and
     * lowers its own limit to the broker's.
     */
    public Builder maxMessageBytes(long bytes) {
      this.maxMessageBytes = bytes;
      return this;
    }

    /**
     * A fencing token for each message, from the resource's own counter (for example {@code
     * FenceTokens}); the consumer's {@code BrokerInbox} advances the fence with it. Without it,
     * messages carry no fencing headers.
     */
    public Builder fencing(Function<Claim, BrokerHeaders.Fencing> fencing) {
      prologue.fencing(fencing);
      return this;
    }

    /** Validates and builds; connects on first use. */
    public RabbitTransport build() {
      PublishPrologue<RabbitRoute> p = prologue.build(); // routes, then confirmTimeout
      if (maxMessageBytes < 1 || maxMessageBytes > 512L << 20) {
        throw new InvalidConfigurationException(
            "maxMessageBytes", "must be between 1 and 512 MiB, was " + maxMessageBytes);
      }
      return new RabbitTransport(this, p);
    }
  }

  /** The kinds this transport routes. */
  public Set<String> kinds() {
    return prologue.kinds();
  }

  /** The largest body it sends now: the configured limit, or the broker's if that was lower. */
  public long maxMessageBytes() {
    return maxMessageBytes;
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
   * Publishes every claim, then waits for the confirms: one outcome per claim, in order. No
   * exception for a broker problem; each item says what became of it.
   *
   * @param claims the claims, of kinds this transport routes
   * @return the outcomes, in the order of {@code claims}
   */
  public List<Outcome> publishAll(List<? extends Claim> claims) {
    Outcome[] out = new Outcome[claims.size()];
    List<Sent> sent = new ArrayList<>(claims.size());
    String unreachable = null;
    // Exchanges this batch may not publish to (missing, or the check failed), with the reason:
    // one check per exchange per batch, not per message.
    Map<String, String> refused = new HashMap<>();
    for (int i = 0; i < claims.size(); i++) {
      Claim claim = claims.get(i);
      RabbitRoute route = prologue.route(claim.kind());
      if (route == null) {
        out[i] = prologue.unrouted(claim.kind());
        continue;
      }
      Duration wait = prologue.waitBound(claim);
      if (wait == null) {
        out[i] = PublishPrologue.runTimeOver();
        continue;
      }
      byte[] body = claim.payload().getBytes(StandardCharsets.UTF_8);
      long limit = maxMessageBytes;
      if (body.length > limit) {
        out[i] = tooLarge(body.length, limit, "not sent");
        continue;
      }
      if (unreachable != null) {
        // One failed connect per batch: the rest of it does not wait for the broker again.
        out[i] = Outcome.retry(unreachable, Effect.NOT_DELIVERED);
        continue;
      }
      PublishSession s;
      try {
        s = session();
      } catch (PublishSession.NotSentException e) {
        unreachable = e.getMessage();
        out[i] = Outcome.retry(unreachable, Effect.NOT_DELIVERED);
        continue;
      }
      String refusal = refused.get(route.exchange());
      if (refusal == null) {
        try {
          refusal = s.checkExchange(route.exchange());
        } catch (PublishSession.NotSentException e) {
          refusal = e.getMessage();
        }
        if (refusal != null) {
          refused.put(route.exchange(), refusal);
        }
      }
      if (refusal != null) {
        out[i] = Outcome.retry(refusal, Effect.NOT_DELIVERED);
        continue;
      }
      try {
        PublishSession.Pending p =
            s.publish(
                route.exchange(), route.routingKey(), properties(claim), body, claim.workId());
        sent.add(new Sent(i, route, s, p, System.nanoTime() + wait.toNanos(), wait));
      } catch (PublishSession.NotSentException e) {
        out[i] = Outcome.retry(e.getMessage(), Effect.NOT_DELIVERED);
      }
    }
    for (Sent s : sent) {
      out[s.index] = await(s);
    }
    return Arrays.asList(out);
  }

  private record Sent(
      int index,
      RabbitRoute route,
      PublishSession session,
      PublishSession.Pending pending,
      long deadlineNanos,
      Duration bound) {}

  private Outcome await(Sent s) {
    PublishSession.Result r;
    try {
      long nanos = Math.max(0, s.deadlineNanos - System.nanoTime());
      r = s.pending.result.get(nanos, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      s.session.abandon(s.pending);
      return Outcome.retry(
          "no confirm from the broker within " + s.bound + "; effect unknown", Effect.UNKNOWN);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      s.session.abandon(s.pending);
      return Outcome.retry("interrupted while awaiting the confirm", Effect.UNKNOWN);
    } catch (ExecutionException e) {
      return Outcome.retry("awaiting the confirm failed: " + e.getCause(), Effect.UNKNOWN);
    }
    if (r instanceof PublishSession.Confirmed c) {
      if (c.returned() != null) {
        return Outcome.retry(
            "returned by the broker as unroutable: " + c.returned(), Effect.NOT_DELIVERED);
      }
      Map<String, String> where = new LinkedHashMap<>();
      where.put("exchange", s.route.exchange());
      where.put("routing_key", s.route.routingKey());
      return BrokerAccepted.outcome("rabbitmq", null, where);
    }
    if (r instanceof PublishSession.TooLarge t) {
      if (t.limit() > 0 && t.limit() < maxMessageBytes) {
        maxMessageBytes = t.limit();
      }
      return tooLarge(s.pending.size, t.limit(), "refused by the broker: " + t.reason());
    }
    if (r instanceof PublishSession.Nacked) {
      return Outcome.retry("nacked by the broker; effect unknown", Effect.UNKNOWN);
    }
    return Outcome.retry(((PublishSession.Lost) r).reason(), Effect.UNKNOWN);
  }

  private static Outcome tooLarge(long size, long limit, String how) {
    return Outcome.fail(
        "payload is "
            + size
            + " bytes, over the broker's max message size of "
            + limit
            + " bytes; "
            + how,
        Effect.NOT_DELIVERED);
  }

  private AMQP.BasicProperties properties(Claim claim) {
    Map<String, Object> headers = new LinkedHashMap<>(prologue.headers(claim));
    return new AMQP.BasicProperties.Builder()
        .messageId(claim.workId())
        .type(claim.kind())
        .contentType("application/json")
        .contentEncoding("UTF-8")
        .deliveryMode(2)
        .headers(headers)
        .build();
  }

  /** The current session, or null (for tests). */
  PublishSession currentSession() {
    synchronized (sessionLock) {
      return session;
    }
  }

  private PublishSession session() throws PublishSession.NotSentException {
    synchronized (sessionLock) {
      if (closed) {
        throw new PublishSession.NotSentException("the transport is closed", null);
      }
      if (session == null || !session.isOpen()) {
        if (session != null) {
          session.close();
        }
        session = null;
        session = PublishSession.open(factory);
      }
      return session;
    }
  }

  /** Closes the connection; messages still awaiting a confirm end "effect unknown". */
  @Override
  public void close() {
    synchronized (sessionLock) {
      closed = true;
      if (session != null) {
        session.close();
        session = null;
      }
    }
  }
}
