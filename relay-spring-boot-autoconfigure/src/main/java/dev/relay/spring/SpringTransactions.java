package dev.relay.spring;

import dev.relay.InvalidWorkException;
import dev.relay.TransactionRequiredException;
import dev.relay.receiver.InvalidReceiverInputException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs Relay's statements on the connection of the current Spring transaction: refused, before any
 * SQL, outside a read-write transaction that holds a connection of the DataSource; an error after
 * SQL was sent marks the transaction rollback-only.
 */
final class SpringTransactions {
  private SpringTransactions() {}

  static <R> R onTransactionConnection(
      DataSource dataSource, String what, Function<Connection, R> work) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new TransactionRequiredException(
          what
              + " needs the business transaction, and no Spring transaction is active: call it"
              + " from @Transactional code or a TransactionTemplate");
    }
    if (TransactionSynchronizationManager.isCurrentTransactionReadOnly()) {
      throw new TransactionRequiredException(
          what
              + " needs a read-write transaction, and the current Spring transaction is read-only");
    }
    if (!(TransactionSynchronizationManager.getResource(dataSource)
        instanceof ConnectionHolder holder)) {
      throw new TransactionRequiredException(
          "the current Spring transaction holds no connection of Relay's DataSource; use a"
              + " transaction manager for that DataSource (DataSourceTransactionManager,"
              + " JpaTransactionManager)");
    }
    Connection c = DataSourceUtils.getConnection(dataSource);
    try {
      requireManualCommit(c);
      return work.apply(c);
    } catch (InvalidWorkException
        | InvalidReceiverInputException
        | TransactionRequiredException e) {
      throw e; // refused before anything was sent
    } catch (RuntimeException e) {
      holder.setRollbackOnly();
      throw e;
    } finally {
      DataSourceUtils.releaseConnection(c, dataSource);
    }
  }

  private static void requireManualCommit(Connection c) {
    try {
      if (c.getAutoCommit()) {
        throw new TransactionRequiredException(
            "the connection of the current Spring transaction is in auto-commit mode");
      }
    } catch (SQLException e) {
      throw new TransactionRequiredException(
          "the connection of the current Spring transaction cannot be used: " + e.getMessage());
    }
  }
}
