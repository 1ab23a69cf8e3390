package dev.relay.receiver.http;

import java.sql.Connection;

/**
 * A delivery's effect in an HTTP receiver: the receiver's writes on the given connection, inside
 * the transaction that also records the delivery, and the reply to store and send. It must not
 * commit, roll back or change the auto-commit mode. A thrown exception rolls everything back and is
 * answered 500 (the sender retries; nothing was recorded).
 */
@FunctionalInterface
public interface HttpEffect {
  /**
   * Applies a delivery.
   *
   * @param connection the receiver's connection, in the helper's transaction
   * @param delivery the validated delivery
   * @return the reply; stored and sent again for every repeat
   * @throws Exception anything; the transaction is rolled back
   */
  HttpReply apply(Connection connection, Delivery delivery) throws Exception;
}
