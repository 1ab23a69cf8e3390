package dev.relay.internal.jdbc;

import dev.relay.InvalidConfigurationException;
import java.time.Duration;

/**
 * The server-side limits Relay sets on each of its own transactions with {@code SET LOCAL}, so a
 * connection shared with the application through a pool keeps the application's own settings.
 */
public record Timeouts(Duration statement, Duration lock, Duration idleInTransaction) {
  /** 30 s per statement, 10 s per lock wait, 60 s idle inside a transaction. */
  public static final Timeouts DEFAULT =
      new Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(10), Duration.ofSeconds(60));

  /** Validates that each limit is at least 1 ms. */
  public Timeouts {
    check("statementTimeout", statement);
    check("lockTimeout", lock);
    check("idleInTransactionTimeout", idleInTransaction);
  }

  private static void check(String name, Duration d) {
    if (d == null || d.toMillis() < 1 || d.toMillis() > Integer.MAX_VALUE) {
      throw new InvalidConfigurationException(
          name, "must be between 1 ms and " + Integer.MAX_VALUE + " ms, was " + d);
    }
  }

  /** How many statements {@link #setLocalSql} is. */
  public static final int SET_LOCAL_STATEMENTS = 3;

  /** The statement that applies these limits to the current transaction only. */
  public String setLocalSql() {
    return "SET LOCAL statement_timeout = "
        + statement.toMillis()
        + "; SET LOCAL lock_timeout = "
        + lock.toMillis()
        + "; SET LOCAL idle_in_transaction_session_timeout = "
        + idleInTransaction.toMillis();
  }
}
