package dev.relay.receiver;

import dev.relay.InvalidConfigurationException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.receiver.FenceStore;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;

/**
 * Hands out fencing tokens from a per-resource counter ({@code fence_counter}), in the caller's
 * transaction: 1, 2, 3 ... for each resource. Allocate the token in the transaction that creates
 * the work (or claims it) and carry it to the receiver, whose {@link Fence} refuses lower ones.
 *
 * <pre>{@code
 * c.setAutoCommit(false);
 * long token = tokens.next(c, "mailbox-1");
 * outbox.enqueue(c, Work.of("mailbox-1-settings-42", "set_mailbox", json(token, settings)));
 * c.commit();
 * }</pre>
 *
 * <p>Tokens come from the resource's own scope, so two different jobs touching one resource are
 * ordered. A job's claim generation is not such a token: it only orders that job's own attempts.
 * The counter row stays locked until the transaction ends, so allocations for one resource are
 * serialised (and commit in token order); a rolled-back allocation leaves a gap, which a fence does
 * not mind. Thread-safe; holds no connection.
 */
public final class FenceTokens {
  private final FenceStore store;

  private FenceTokens(SchemaName schema) {
    this.store = new FenceStore(schema);
  }

  /** Tokens on schema {@code relay}. */
  public static FenceTokens create() {
    return forSchema("relay");
  }

  /**
   * Tokens on {@code schema}.
   *
   * @throws InvalidConfigurationException if the schema name is not a plain identifier
   */
  public static FenceTokens forSchema(String schema) {
    return new FenceTokens(SchemaName.of(schema));
  }

  /**
   * The next token of {@code resource}, in the transaction open on {@code c}.
   *
   * @param c the producer's or claimer's connection, in its open transaction
   * @param resource the protected resource
   * @return a token higher than every token of the resource allocated before
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if the resource is invalid
   */
  public long next(Connection c, String resource) {
    ReceiverInput.id("resource", resource);
    ReceiverInput.requireTransaction(c, "a fencing token allocation");
    return store.nextToken(c, resource);
  }
}
