package dev.relay.spring;

import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.InboxEffect;
import dev.relay.receiver.InboxResult;
import java.util.Objects;
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
 */
public final class InboxTemplate {
  private final DataSource dataSource;
  private final Inbox inbox;
  private final Fence fence;

  /**
   * Creates the template; the auto-configuration declares one.
   *
   * @param dataSource the application's DataSource, the one its transactions are bound to
   * @param inbox the inbox (schema, payload limit)
   * @param fence the fence, in the same schema
   */
  public InboxTemplate(DataSource dataSource, Inbox inbox, Fence fence) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.inbox = Objects.requireNonNull(inbox, "inbox");
    this.fence = Objects.requireNonNull(fence, "fence");
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
   * Accepts {@code token} for {@code resource} if it is not older than the highest seen; see {@link
   * Fence#advance}. A refused token means a newer claim has written: do not apply.
   */
  public FenceResult advanceFence(String resource, long token) {
    return SpringTransactions.onTransactionConnection(
        dataSource, "fencing", c -> fence.advance(c, resource, token));
  }
}
