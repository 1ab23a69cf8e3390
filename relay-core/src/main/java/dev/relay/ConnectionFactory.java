package dev.relay;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Opens a dedicated connection that Relay keeps for a long time and closes itself: the LISTEN
 * connection of a {@link Relay} ({@link Relay.Builder#listenConnections}) and the advisory-lock
 * connection of {@link dev.relay.admin.Maintenance}. A session-level LISTEN or advisory lock lives
 * in its session, so these cannot be pooled connections that go back to other users between uses:
 * passing {@code () -> DriverManager.getConnection(url, user, password)} keeps a pool whole.
 *
 * <pre>{@code
 * ConnectionFactory direct = () -> DriverManager.getConnection(url, user, password);
 * Relay relay = Relay.builder(pool).listenConnections(direct).handle("mail", mailer).build();
 * }</pre>
 *
 * <p>Called from Relay's own threads, possibly again after a connection was lost; it must be
 * thread-safe.
 */
@FunctionalInterface
public interface ConnectionFactory {
  /**
   * Opens a new connection in auto-commit mode; Relay closes it when done with it.
   *
   * @return the new connection
   * @throws SQLException if no connection can be opened (Relay retries with backoff)
   */
  Connection open() throws SQLException;
}
