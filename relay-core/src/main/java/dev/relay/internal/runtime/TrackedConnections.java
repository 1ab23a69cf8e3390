package dev.relay.internal.runtime;

import dev.relay.ConnectionFactory;
import dev.relay.RelayException;
import dev.relay.internal.jdbc.SqlErrors;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every connection the runtime uses, tracked while in use, so that {@code close()} can keep its
 * bound: {@link #closeAll()} aborts ({@link Connection#abort}) those still in use and refuses any
 * more, so no Relay thread can start a database write after {@code close()} returned.
 */
final class TrackedConnections {
  private static final Logger log = LoggerFactory.getLogger(TrackedConnections.class);

  private final DataSource dataSource;
  private final Set<Connection> inUse = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  TrackedConnections(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /**
   * A connection from the data source for one of Relay's short transactions, tracked until it is
   * closed. After {@link #closeAll()} there are none.
   *
   * @throws RelayException if relay is closed or no connection can be had
   */
  Connection open(String what) {
    return tracked(
        what,
        () -> {
          try {
            return dataSource.getConnection();
          } catch (SQLTransientConnectionException e) {
            // A pool that lent nothing in time (HikariCP's connectionTimeout): most often one too
            // small for the connections Relay keeps and the ones its parts take at once.
            throw SqlErrors.translate(
                "getting a connection to "
                    + what
                    + " (the data source lent none in time while this Relay had "
                    + inUse.size()
                    + " open; it keeps its LISTEN connection for the runtime's life unless"
                    + " listenConnections opens it elsewhere, and claims, records outcomes and"
                    + " renews leases at once: size the pool for them plus the application's)",
                e);
          } catch (SQLException e) {
            throw SqlErrors.translate("getting a connection to " + what, e);
          }
        });
  }

  /** The dedicated LISTEN connection from {@code factory}, tracked like the others. */
  Connection openListen(ConnectionFactory factory) throws SQLException {
    try {
      return tracked(
          "listen",
          () -> {
            try {
              return factory.open();
            } catch (SQLException e) {
              throw SqlErrors.translate("opening the LISTEN connection", e);
            }
          });
    } catch (RelayException e) {
      throw new SQLException(e.getMessage(), e.sqlState(), e);
    }
  }

  /** How many tracked connections are open now. */
  int inUse() {
    return inUse.size();
  }

  /** Refuses further connections and aborts those still in use. */
  void closeAll() {
    closed = true;
    for (Connection c : inUse) {
      abort(c);
    }
  }

  private Connection tracked(String what, Supplier<Connection> open) {
    if (closed) {
      throw new RelayException("relay is closed: no connection for " + what);
    }
    Connection raw = open.get();
    Connection wrapped =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  switch (method.getName()) {
                    case "close" -> inUse.remove(proxy);
                    case "equals" -> {
                      return proxy == args[0];
                    }
                    case "hashCode" -> {
                      return System.identityHashCode(proxy);
                    }
                    default -> {}
                  }
                  try {
                    return method.invoke(raw, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    inUse.add(wrapped);
    if (closed) {
      // closeAll() ran while this one was being opened: it must not be used.
      inUse.remove(wrapped);
      abort(raw);
      throw new RelayException("relay is closed: no connection for " + what);
    }
    return wrapped;
  }

  private static void abort(Connection c) {
    try {
      // Runs at once on this thread: the socket is closed, and a thread blocked on it fails.
      c.abort(Runnable::run);
      log.info("aborted a connection still in use when relay closed");
    } catch (SQLException | RuntimeException e) {
      log.debug("aborting a connection failed", e);
    }
  }
}
