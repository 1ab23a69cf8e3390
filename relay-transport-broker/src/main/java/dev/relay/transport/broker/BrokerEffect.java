package dev.relay.transport.broker;

import java.sql.Connection;

/**
 * The consumer's writes for one received message, made on the connection it is given, inside the
 * transaction that also records the message in the inbox. It must not commit, roll back or change
 * the auto-commit mode. A call to another remote system from inside it is not covered by the inbox.
 */
@FunctionalInterface
public interface BrokerEffect {
  /**
   * Applies the message.
   *
   * @param connection the consumer's connection, in the inbox's transaction
   * @param delivery the message and its headers
   * @throws Exception anything; the transaction is then rolled back and the message not recorded
   */
  void apply(Connection connection, BrokerDelivery delivery) throws Exception;
}
