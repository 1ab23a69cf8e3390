package dev.relay.receiver;

import dev.relay.InvalidConfigurationException;
import dev.relay.RetryableException;
import dev.relay.TransactionRequiredException;
import dev.relay.internal.receiver.ReceiverInput;
import java.sql.Connection;

/**
 * Request idempotency for an incoming request token, such as the shop's {@code purchase-103}: the
 * first request runs its handler and stores the response in the same transaction as the handler's
 * writes; a retry with the same key and an equal request body returns the stored response without
 * running the handler, also when the first request's COMMIT reply never reached the client; a retry
 * with a different body is refused ({@link PayloadMismatchException}). It is the {@link Inbox} with
 * the scope as consumer, the key as message ID and the request body as payload, so requests share
 * the inbox's table, horizon and purge.
 *
 * <pre>{@code
 * IdempotentRequests purchases = IdempotentRequests.create("purchase");
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   InboxResult r = purchases.execute(c, "purchase-103", requestJson,
 *       tx -> shop.placeOrder(tx, request));        // returns the response as JSON text
 *   c.commit();
 *   return r.result();                              // the same response on every retry
 * }
 * }</pre>
 *
 * <p>On any exception, roll back: the key is then unused and a retry runs the handler. The key must
 * be chosen by the client once per intention and reused for its retries; a key minted per attempt
 * protects nothing. Thread-safe; holds no connection.
 */
public final class IdempotentRequests {
  private final Inbox inbox;
  private final String scope;

  private IdempotentRequests(Inbox inbox, String scope) {
    this.inbox = inbox;
    this.scope = scope;
  }

  /**
   * Requests of {@code scope} on schema {@code relay}.
   *
   * @param scope the kind of request (the inbox consumer), 1-100 characters from {@code A-Z a-z 0-9
   *     . _ - :}
   * @return the request store
   */
  public static IdempotentRequests create(String scope) {
    return using(Inbox.create(), scope);
  }

  /**
   * Requests of {@code scope} stored in {@code inbox} (its schema and payload limit).
   *
   * @param inbox the inbox to store requests in
   * @param scope the kind of request
   * @return the request store
   * @throws InvalidConfigurationException if the inbox is null or the scope is invalid
   */
  public static IdempotentRequests using(Inbox inbox, String scope) {
    if (inbox == null) {
      throw new InvalidConfigurationException("inbox", "is null");
    }
    try {
      ReceiverInput.name("scope", scope);
    } catch (InvalidReceiverInputException e) {
      throw new InvalidConfigurationException("scope", e.getMessage());
    }
    return new IdempotentRequests(inbox, scope);
  }

  /** The scope (inbox consumer) of these requests. */
  public String scope() {
    return scope;
  }

  /**
   * Runs the request once per key; see the class comment. Waits for a concurrent request with the
   * same key, then returns its response (or runs, if it rolled back).
   *
   * @param c the connection, in its open transaction (not auto-commit)
   * @param key the client's idempotency key, 1-200 characters
   * @param request the request body as JSON text
   * @param handler the request's writes on {@code c}; returns the response as JSON text
   * @return {@link InboxResult.Status#APPLIED} with the new response, or {@link
   *     InboxResult.Status#DUPLICATE} with the stored one
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidReceiverInputException if the key, body or response is invalid
   * @throws PayloadMismatchException if the key was first used with a different body
   * @throws RetryableException on a serialization failure, deadlock, lock timeout or lost
   *     connection
   */
  public InboxResult execute(Connection c, String key, String request, InboxEffect handler) {
    return inbox.process(c, scope, key, request, handler);
  }

  /**
   * As {@link #execute}, but answers {@link InboxResult.Status#IN_PROGRESS} at once, having written
   * nothing, when a request with the same key is still running: tell the client to retry later.
   *
   * @param c the connection, in its open transaction (not auto-commit)
   * @param key the client's idempotency key
   * @param request the request body as JSON text
   * @param handler the request's writes on {@code c}
   * @return applied, the stored response, or in progress
   */
  public InboxResult tryExecute(Connection c, String key, String request, InboxEffect handler) {
    return inbox.tryProcess(c, scope, key, request, handler);
  }
}
