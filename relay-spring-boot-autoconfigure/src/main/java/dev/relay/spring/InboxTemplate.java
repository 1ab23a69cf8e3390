package dev.relay.spring;

import dev.relay.RelayTracing;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxEffect;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.http.HeaderLookup;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The receiving side in Spring: the {@link Inbox} and the {@link Fence} in the application's own
 * {@code @Transactional} code, on the connection the current Spring transaction holds, so the inbox
 * record, the fence and the receiver's writes commit or roll back together.
 *
 * <pre>{@code
 * @Transactional
 * public String receive(String messageId, String payloadJson) {
 *   return inbox.process("mailer", messageId, payloadJson, c -> {
 *     mails.save(new Mail(messageId, payloadJson));     // JPA, JdbcTemplate: the same transaction
 *     return "{\"queued\": true}";
 *   }).result();                                        // the first delivery's result on a repeat
 * }
 * }</pre>
 *
 * <p>The effect runs only for the first delivery of a message ID; a repeat returns the saved result
 * without running it. The rules are {@link Inbox}'s and {@link Fence}'s; this class adds the
 * transaction: outside a read-write Spring transaction on the DataSource it refuses with {@link
 * dev.relay.TransactionRequiredException} before any SQL, and an error after SQL was sent marks the
 * transaction rollback-only (under {@code DataSourceTransactionManager}). Thread-safe.
 *
 * <p>Tracing: given the message's headers ({@link #process(String, String, String, HeaderLookup,
 * InboxEffect)}), the effect runs in a consumer span (name {@code process <consumer>}) whose parent
 * is the sender's {@code traceparent}, through the starter's tracing hook (configured when the
 * application has Micrometer Tracing). The calls without headers open no span of their own: the
 * effect then runs in whatever span is current (a listener's or a controller's observation).
 *
 * <pre>{@code
 * @RabbitListener(queues = "orders.mail")
 * @Transactional
 * public void onOrder(Message m) {
 *   MessageProperties p = m.getMessageProperties();
 *   inbox.process("mailer", p.getMessageId(), new String(m.getBody(), UTF_8),
 *       name -> Objects.toString(p.getHeader(name), null),   // traceparent, tracestate
 *       c -> "{}");
 * }
 * }</pre>
 */
public final class InboxTemplate {
  private final DataSource dataSource;
  private final Inbox inbox;
  private final Fence fence;
  private final RelayTracing tracing;

  /**
   * The trace headers a message carries (W3C Trace Context), continued by the calls with headers.
   */
  /**
   * Creates the template; the auto-configuration declares one.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param inbox the inbox (schema, payload limit)
   * @param fence the fence, in the same schema
   */
  public InboxTemplate(DataSource dataSource, Inbox inbox, Fence fence) {
    this(dataSource, inbox, fence, RelayTracing.NONE);
  }

  /**
   * Creates the template with a tracing hook; the auto-configuration passes the starter's.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param inbox the inbox (schema, payload limit)
   * @param fence the fence, in the same schema
   * @param tracing the tracing hook ({@link RelayTracing#NONE} for none)
   */
  public InboxTemplate(DataSource dataSource, Inbox inbox, Fence fence, RelayTracing tracing) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.inbox = Objects.requireNonNull(inbox, "inbox");
    this.fence = Objects.requireNonNull(fence, "fence");
    this.tracing = Objects.requireNonNull(tracing, "tracing");
  }

  /**
   * Applies {@code messageId} once for {@code consumer}; see {@link Inbox#process}. Waits for a
   * concurrent transaction applying the same message.
   *
   * @param effect the receiver's writes; its connection is the transaction's (JdbcTemplate and JPA
   *     in the same transaction write on it too); returns the result as JSON text
   */
  public InboxResult process(
      String consumer, String messageId, String payloadJson, InboxEffect effect) {
    return SpringTransactions.onTransactionConnection(
        dataSource,
        "inbox processing",
        c -> inbox.process(c, consumer, messageId, payloadJson, effect));
  }

  /**
   * As {@link #process}, but returns {@link InboxResult.Status#IN_PROGRESS} at once when another
   * transaction is applying the same message; see {@link Inbox#tryProcess}.
   */
  public InboxResult tryProcess(
      String consumer, String messageId, String payloadJson, InboxEffect effect) {
    return SpringTransactions.onTransactionConnection(
        dataSource,
        "inbox processing",
        c -> inbox.tryProcess(c, consumer, messageId, payloadJson, effect));
  }

  /**
   * As {@link #process(String, String, String, InboxEffect)}, in a consumer span that continues the
   * sender's trace from the message's {@code traceparent}/{@code tracestate} headers (a new root
   * when it has none; no span at all when no tracing is configured).
   *
   * @param headers the message's headers by name ({@code request::getHeader}, an AMQP or Kafka
   *     header read as text); {@code null} for an absent header
   */
  public InboxResult process(
      String consumer,
      String messageId,
      String payloadJson,
      HeaderLookup headers,
      InboxEffect effect) {
    return traced(
        headers, messageId, consumer, () -> process(consumer, messageId, payloadJson, effect));
  }

  /**
   * As {@link #tryProcess(String, String, String, InboxEffect)}, in a consumer span that continues
   * the sender's trace from the message's headers; see {@link #process(String, String, String,
   * HeaderLookup, InboxEffect)}.
   */
  public InboxResult tryProcess(
      String consumer,
      String messageId,
      String payloadJson,
      HeaderLookup headers,
      InboxEffect effect) {
    return traced(
        headers, messageId, consumer, () -> tryProcess(consumer, messageId, payloadJson, effect));
  }

  private InboxResult traced(
      HeaderLookup headers, String messageId, String consumer, Supplier<InboxResult> apply) {
    Objects.requireNonNull(headers, "headers");
    if (tracing == RelayTracing.NONE) {
      return apply.get(); // no tracer: no header is read, no scope is opened
    }
    Map<String, String> carrier = RelayTracing.headers(headers::first);
    RelayTracing.Scope scope = tracing.enterDelivery(carrier, messageId, consumer);
    try {
      return apply.get();
    } finally {
      if (scope != null) {
        scope.close();
      }
    }
  }

  /**
   * Accepts {@code token} for {@code resource} if it is not older than the highest seen; see {@link
   * Fence#advance}. A refused token means a newer claim has written: do not apply.
   */
  public FenceResult advanceFence(String resource, long token) {
    return SpringTransactions.onTransactionConnection(
        dataSource, "fencing", c -> fence.advance(c, resource, token));
  }
}
