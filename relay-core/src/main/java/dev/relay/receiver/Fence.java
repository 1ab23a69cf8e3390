package dev.relay.receiver;

import dev.relay.InvalidConfigurationException;
import dev.relay.RetryableException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.receiver.FenceStore;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;

/**
 * A fence for a protected resource: remembers the highest token accepted and refuses lower ones,
 * atomically with the protected write, because it runs in that write's transaction.
 *
 * <pre>{@code
 * Fence fence = Fence.create();
 * c.setAutoCommit(false);
 * FenceResult f = fence.advance(c, "mailbox-1", token);
 * if (f.refused()) { c.rollback(); return stale(f.highestToken()); }
 * writeMailboxSettings(c, ...);                     // protected write, same transaction
 * c.commit();
 * }</pre>
 *
 * <p>A token equal to the highest is accepted: a fence orders holders of authority, it does not
 * deduplicate. A repeat of the same operation with the same token passes it; use the {@link Inbox}
 * (keyed by the message ID) to apply one intention once. The accepted row stays locked until the
 * transaction ends, so two racing tokens are decided one after the other and a lower one can never
 * be applied after a higher one. A lower token that arrives <i>before</i> the higher one is
 * accepted: the fence only knows what it has seen.
 *
 * <p>Tokens must come from the resource's own scope, for example {@link FenceTokens} in the
 * transaction that creates the work. One job's claim generations only order that job's own
 * attempts: another job touching the same resource has its own generation 7.
 *
 * <p>Thread-safe; holds no connection. Under REPEATABLE READ or SERIALIZABLE a concurrent advance
 * surfaces as a {@link RetryableException}: roll back and repeat.
 */
public final class Fence {
  private final FenceStore store;

  private Fence(SchemaName schema) {
    this.store = new FenceStore(schema);
  }

  /** A fence on schema {@code relay}. */
  public static Fence create() {
    return forSchema("relay");
  }

  /**
   * A fence on {@code schema}.
   *
   * @throws InvalidConfigurationException if the schema name is not a plain identifier
   */
  public static Fence forSchema(String schema) {
    return new Fence(SchemaName.of(schema));
  }

  /**
   * Offers {@code token} for {@code resource} in the transaction open on {@code c}: accepted (and
   * now the highest) when it is equal to or higher than every token seen, refused otherwise. A
   * refused call changes nothing; roll back or skip the protected write.
   *
   * @param c the connection of the protected write, in its open transaction
   * @param resource the protected resource, 1-200 characters from {@code A-Z a-z 0-9 . _ - : / @ +
   *     = #}
   * @param token zero or more
   * @return whether the token was accepted, and the highest token now held
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if the resource or token is invalid
   */
  public FenceResult advance(Connection c, String resource, long token) {
    ReceiverInput.id("resource", resource);
    ReceiverInput.token("token", token);
    ReceiverInput.requireTransaction(c, "a fence");
    return store.advance(c, resource, token);
  }
}
