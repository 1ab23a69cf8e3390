package dev.relay.receiver.http;

import dev.relay.InvalidConfigurationException;
import dev.relay.RelayException;
import dev.relay.RelayTracing;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.json.JsonText;
import dev.relay.internal.receiver.ReceiverInput;
import dev.relay.internal.receiver.ReplyCodec;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.InvalidReceiverInputException;
import dev.relay.receiver.PayloadMismatchException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Applies inbox and fence to an HTTP delivery in one call, in any Java HTTP server: it reads {@link
 * RelayHeaders}, runs the effect once per {@code Idempotency-Key} in its own transaction on a
 * connection from the data source, and returns the reply to send.
 *
 * <pre>{@code
 * HttpReceiver receiver = HttpReceiver.builder(dataSource).consumer("mailer").build();
 * server.createContext("/deliveries", exchange -> {
 *   String body = new String(exchange.getRequestBody().readAllBytes(), UTF_8);
 *   HttpReply reply = receiver.handle(exchange.getRequestHeaders()::getFirst, body,
 *       (tx, delivery) -> HttpReply.json(200, sendAndRecord(tx, delivery)));
 *   send(exchange, reply);                           // status, Content-Type, headers, body
 * });
 * }</pre>
 *
 * <table>
 *   <caption>Replies</caption>
 *   <tr><th>Case</th><th>Reply</th><th>Transaction</th></tr>
 *   <tr><td>first delivery</td><td>the effect's reply (stored)</td><td>committed</td></tr>
 *   <tr><td>repeat, equal body</td><td>the stored reply, {@code Idempotent-Replayed: true}</td>
 *       <td>nothing written</td></tr>
 *   <tr><td>same key still running elsewhere</td><td>409 with {@code Retry-After}: retry later, not a
 *       rejection</td><td>nothing written</td></tr>
 *   <tr><td>missing or invalid key, headers or JSON body</td><td>400</td><td>nothing sent</td></tr>
 *   <tr><td>fencing token lower than the highest seen</td><td>412 (not stored)</td>
 *       <td>rolled back</td></tr>
 *   <tr><td>same key, different body</td><td>422</td><td>rolled back</td></tr>
 *   <tr><td>the effect threw</td><td>500 (not stored)</td><td>rolled back</td></tr>
 *   <tr><td>deadlock, lock timeout, lost connection, uncertain COMMIT</td><td>503 with {@code
 *       Retry-After}</td><td>rolled back or unknown: the retry finds out</td></tr>
 * </table>
 *
 * <p>The body must be JSON (it is the inbox payload). The fence, when the delivery carries a token,
 * is advanced inside the recorded transaction before the effect, so a repeat of an applied delivery
 * gets its stored reply without a fence check, and a stale one changes nothing. To join a
 * transaction of your own instead, use {@link Delivery#read}, {@link Inbox} and {@link Fence}
 * directly. Thread-safe; share one instance.
 */
public final class HttpReceiver {
  private final DataSource dataSource;
  private final String consumer;
  private final Inbox inbox;
  private final Fence fence;
  private final Duration retryAfter;
  private final int maxPayloadBytes;
  private final Timeouts timeouts;
  private final RelayTracing tracing;

  private HttpReceiver(Builder b) {
    this.dataSource = b.dataSource;
    this.tracing = b.tracing;
    this.consumer = b.consumer;
    this.inbox = Inbox.builder().schema(b.schema).maxPayloadBytes(b.maxPayloadBytes).build();
    this.fence = Fence.forSchema(b.schema);
    this.retryAfter = b.retryAfter;
    this.maxPayloadBytes = b.maxPayloadBytes;
    // The helper's own transaction is bounded like every Relay transaction (SET LOCAL: the pooled
    // connection keeps the application's settings afterwards).
    this.timeouts =
        new Timeouts(b.statementTimeout, b.lockTimeout, b.statementTimeout.multipliedBy(2));
  }

  /**
   * A builder for a receiver taking connections from {@code dataSource}.
   *
   * @param dataSource the receiver's own database
   * @return the builder
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Configures an {@link HttpReceiver}; every setting is validated at {@link #build()}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String consumer;
    private String schema = "relay";
    private int maxPayloadBytes = Inbox.DEFAULT_MAX_PAYLOAD_BYTES;
    private Duration retryAfter = Duration.ofSeconds(1);
    private Duration statementTimeout = Duration.ofSeconds(30);
    private Duration lockTimeout = Duration.ofSeconds(10);
    private RelayTracing tracing = RelayTracing.NONE;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The inbox consumer name of this endpoint (required). */
    public Builder consumer(String consumer) {
      this.consumer = consumer;
      return this;
    }

    /** The schema holding the inbox and fence tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The largest body accepted, in UTF-8 bytes (default 1 MiB). */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      this.maxPayloadBytes = maxPayloadBytes;
      return this;
    }

    /** The {@code Retry-After} sent with 409 and 503, 1 s to 1 h, whole seconds (default 1 s). */
    public Builder retryAfter(Duration retryAfter) {
      this.retryAfter = retryAfter;
      return this;
    }

    /**
     * The longest one statement of a delivery's transaction may run, 1 ms to 1 h (default 30 s);
     * the transaction may sit idle for twice as long between statements.
     */
    public Builder statementTimeout(Duration statementTimeout) {
      this.statementTimeout = statementTimeout;
      return this;
    }

    /**
     * The longest a delivery waits for a row lock, 1 ms to 1 h (default 10 s); a timeout is
     * answered 503 with {@code Retry-After}.
     */
    public Builder lockTimeout(Duration lockTimeout) {
      this.lockTimeout = lockTimeout;
      return this;
    }

    /**
     * The tracing hook (default {@link RelayTracing#NONE}): each delivery is handled inside the
     * scope it opens for the request's {@code traceparent}/{@code tracestate}, so the receiver's
     * span continues the sender's trace.
     */
    public Builder tracing(RelayTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /** Validates the settings and builds the receiver. */
    public HttpReceiver build() {
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource", "is null");
      }
      try {
        ReceiverInput.name("consumer", consumer);
      } catch (InvalidReceiverInputException e) {
        throw new InvalidConfigurationException("consumer", e.getMessage());
      }
      if (retryAfter == null || retryAfter.toSeconds() < 1 || retryAfter.toSeconds() > 3600) {
        throw new InvalidConfigurationException(
            "retryAfter", "must be between 1 second and 1 hour, was " + retryAfter);
      }
      requireMillis("statementTimeout", statementTimeout);
      requireMillis("lockTimeout", lockTimeout);
      JsonText.checkLimitSetting(maxPayloadBytes);
      return new HttpReceiver(this);
    }

    private static void requireMillis(String name, Duration d) {
      if (d == null || d.toMillis() < 1 || d.toMillis() > 3_600_000) {
        throw new InvalidConfigurationException(name, "must be between 1 ms and 1 hour, was " + d);
      }
    }
  }

  /** Thrown inside the recorded transaction to roll it back when the fence refuses. */
  private static final class StaleToken extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient FenceResult result;

    StaleToken(FenceResult result) {
      super(null, null, false, false);
      this.result = result;
    }
  }

  /**
   * Handles one delivery; see the class comment for every reply. Never throws for a refused or
   * failed delivery: the reply says what the sender should do.
   *
   * @param headers the request's header lookup
   * @param body the request body (JSON text)
   * @param effect the receiver's writes and reply
   * @return the reply to send
   */
  public HttpReply handle(HeaderLookup headers, String body, HttpEffect effect) {
    Delivery delivery;
    try {
      delivery = Delivery.read(headers, body);
      ReceiverInput.json("body", body, maxPayloadBytes);
    } catch (InvalidReceiverInputException e) {
      return HttpReply.text(400, e.getMessage());
    }
    if (tracing == RelayTracing.NONE) {
      return handleRead(delivery, effect);
    }
    RelayTracing.Scope scope = enterDelivery(headers, delivery.messageId());
    try {
      return handleRead(delivery, effect);
    } finally {
      scope.close();
    }
  }

  private RelayTracing.Scope enterDelivery(HeaderLookup headers, String workId) {
    Map<String, String> carrier = RelayTracing.headers(headers::first);
    RelayTracing.Scope scope = tracing.enterDelivery(carrier, workId, "http");
    return scope == null ? RelayTracing.Scope.NONE : scope;
  }

  private HttpReply handleRead(Delivery delivery, HttpEffect effect) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      boolean ended = false;
      try {
        try (Statement s = c.createStatement()) {
          s.execute(timeouts.setLocalSql());
        }
        HttpReply reply = handleIn(c, delivery, effect);
        ended = true;
        return reply;
      } finally {
        if (!ended) {
          // An Error or a failed SET: never let setAutoCommit(true) commit a half-done delivery.
          rollbackQuietly(c);
        }
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      return retryLater(503, "database unavailable: " + e.getMessage());
    }
  }

  private HttpReply handleIn(Connection c, Delivery delivery, HttpEffect effect)
      throws SQLException {
    InboxResult r;
    try {
      r =
          inbox.tryProcess(
              c,
              consumer,
              delivery.messageId(),
              delivery.body(),
              tx -> {
                if (delivery.fencingToken() != null) {
                  FenceResult f =
                      fence.advance(tx, delivery.fencingResource(), delivery.fencingToken());
                  if (f.refused()) {
                    throw new StaleToken(f);
                  }
                }
                HttpReply reply = effect.apply(tx, delivery);
                if (reply == null) {
                  throw new IllegalStateException("the effect returned no reply");
                }
                return ReplyCodec.encode(reply);
              });
    } catch (StaleToken e) {
      c.rollback();
      return HttpReply.text(
          412,
          "stale fencing token "
              + e.result.token()
              + " for "
              + e.result.resource()
              + ": token "
              + e.result.highestToken()
              + " was already accepted");
    } catch (PayloadMismatchException e) {
      c.rollback();
      return HttpReply.text(422, e.getMessage());
    } catch (InvalidReceiverInputException e) {
      c.rollback();
      return HttpReply.text(400, e.getMessage());
    } catch (RelayException e) {
      c.rollback();
      if (e.isRetryable()) {
        return retryLater(503, e.getMessage());
      }
      return HttpReply.text(500, "delivery not applied: " + e.getMessage());
    } catch (RuntimeException e) {
      c.rollback();
      return HttpReply.text(500, "delivery not applied: " + e);
    }
    switch (r.status()) {
      case IN_PROGRESS:
        c.rollback();
        return retryLater(
            409, "delivery '" + delivery.messageId() + "' is being applied; retry later");
      case DUPLICATE:
        c.rollback(); // nothing was written
        return ReplyCodec.decode(r.result()).withHeader(RelayHeaders.REPLAYED, "true");
      default:
        try {
          c.commit();
        } catch (SQLException e) {
          // Possibly committed: the retry will find the stored reply, or apply it then.
          return retryLater(503, "commit failed, outcome unknown: " + e.getMessage());
        }
        return ReplyCodec.decode(r.result());
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // A broken connection: the server rolls back the unfinished transaction by itself.
    }
  }

  private HttpReply retryLater(int status, String message) {
    return HttpReply.text(status, message)
        .withHeader(RelayHeaders.RETRY_AFTER, Long.toString(retryAfter.toSeconds()));
  }
}
