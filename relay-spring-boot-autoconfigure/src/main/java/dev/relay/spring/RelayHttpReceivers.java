package dev.relay.spring;

import dev.relay.RelayTracing;
import dev.relay.receiver.http.HttpEffect;
import dev.relay.receiver.http.HttpReceiver;
import dev.relay.receiver.http.HttpReply;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.sql.DataSource;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Relay's {@link HttpReceiver} for Spring MVC controllers: one receiver per inbox consumer on the
 * application's DataSource, and its {@link HttpReply} as a {@link ResponseEntity}.
 *
 * <pre>{@code
 * @PostMapping("/mail")
 * ResponseEntity<String> receive(@RequestHeader HttpHeaders headers, @RequestBody String body) {
 *   return receivers.handle("mailer", headers, body,
 *       (connection, delivery) -> HttpReply.json(200, sendAndRecord(connection, delivery)));
 * }
 * }</pre>
 *
 * <p>The answers are {@link HttpReceiver}'s: the effect runs once per {@code Idempotency-Key} and a
 * repeat with an equal body gets the stored reply ({@code Idempotent-Replayed: true}); 409 with
 * {@code Retry-After} while the same key is being applied; 412 for a stale fencing token; 422 for
 * the same key with a changed body; 400 for a missing key or a body that is not JSON.
 *
 * <p>Each delivery runs in a transaction of the receiver's own, on a connection from the
 * application's DataSource that the effect receives: its writes go on that connection. Called while
 * a Spring transaction is active it refuses with {@link IllegalStateException}, since its
 * transaction would not be the caller's; to apply a message inside your own {@code @Transactional}
 * code, use {@link InboxTemplate}. Thread-safe.
 */
public final class RelayHttpReceivers {
  private final DataSource dataSource;
  private final String schema;
  private final RelayTracing tracing;
  private final ConcurrentMap<String, HttpReceiver> receivers = new ConcurrentHashMap<>();

  /**
   * Creates the receivers; the auto-configuration declares one.
   *
   * @param dataSource the application's DataSource, which holds Relay's inbox and fence tables
   * @param schema the schema of those tables
   */
  public RelayHttpReceivers(DataSource dataSource, String schema) {
    this(dataSource, schema, RelayTracing.NONE);
  }

  /**
   * Creates the receivers with a tracing hook: each delivery continues the sender's trace.
   *
   * @param dataSource the application's DataSource, which holds Relay's inbox and fence tables
   * @param schema the schema of those tables
   * @param tracing the tracing hook ({@link RelayTracing#NONE} for none)
   */
  public RelayHttpReceivers(DataSource dataSource, String schema, RelayTracing tracing) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.schema = Objects.requireNonNull(schema, "schema");
    this.tracing = Objects.requireNonNull(tracing, "tracing");
  }

  /**
   * The receiver of {@code consumer}, built on first use.
   *
   * @throws dev.relay.InvalidConfigurationException if the consumer name is invalid
   */
  public HttpReceiver receiver(String consumer) {
    HttpReceiver r = receivers.get(consumer);
    if (r != null) {
      return r;
    }
    HttpReceiver built =
        HttpReceiver.builder(dataSource).consumer(consumer).schema(schema).tracing(tracing).build();
    HttpReceiver raced = receivers.putIfAbsent(consumer, built);
    return raced == null ? built : raced;
  }

  /**
   * Handles one delivery for {@code consumer}; see {@link HttpReceiver#handle}.
   *
   * @param consumer the inbox consumer of this endpoint
   * @param headers the request headers ({@code @RequestHeader HttpHeaders})
   * @param body the request body, JSON text ({@code @RequestBody String})
   * @param effect the receiver's writes, on the given connection, and its reply
   * @return the response to return from the controller
   * @throws IllegalStateException when called inside a Spring transaction
   */
  public ResponseEntity<String> handle(
      String consumer, HttpHeaders headers, String body, HttpEffect effect) {
    Objects.requireNonNull(headers, "headers");
    if (TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException(
          "RelayHttpReceivers applies each delivery in a transaction of its own, and a Spring"
              + " transaction is active: call it from a controller outside @Transactional code,"
              + " or use InboxTemplate to apply the message in your transaction");
    }
    return response(receiver(consumer).handle(headers::getFirst, body, effect));
  }

  /** {@code reply} as a Spring MVC response: status, content type, headers and body. */
  public static ResponseEntity<String> response(HttpReply reply) {
    ResponseEntity.BodyBuilder b =
        ResponseEntity.status(reply.status())
            .contentType(MediaType.parseMediaType(reply.contentType()));
    reply.headers().forEach((name, value) -> b.header(name, value));
    return b.body(reply.body());
  }
}
