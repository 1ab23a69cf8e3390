package dev.relay.receiver;

import java.sql.Connection;

/**
 * The effect of a message: the receiver's own writes, made on the connection it is given, inside
 * the transaction that also records the message. It returns the result to keep as JSON text (what a
 * repeat will receive instead of running the effect again; {@code "null"} when there is nothing to
 * report). It must not commit, roll back or change the auto-commit mode. A call to another remote
 * system from inside an effect is not covered by the inbox: that boundary needs its own idempotency
 * key (see docs/receivers.md).
 */
@FunctionalInterface
public interface InboxEffect {
  /**
   * Applies the message.
   *
   * @param connection the caller's connection, in the caller's transaction
   * @return the result as JSON text
   * @throws Exception anything; the caller must then roll back
   */
  String apply(Connection connection) throws Exception;
}
