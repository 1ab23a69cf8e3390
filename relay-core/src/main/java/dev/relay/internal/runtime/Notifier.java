package dev.relay.internal.runtime;

import dev.relay.ConnectionFactory;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.Deployment;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes the claimer on {@code NOTIFY relay_<schema>}, on a dedicated connection that stays
 * LISTENing for the runtime's life (a LISTEN lives in its session, so it cannot be on a connection
 * that goes back to a pool between uses). A lost connection is re-established with jittered
 * exponential backoff, and every (re)connection is followed at once by a poll: notifications sent
 * while nobody listened are gone. A quiet connection is checked with {@code SELECT 1} now and then,
 * so a silently dead one is noticed.
 *
 * <p>A LISTEN through a pooler that lends server sessions per transaction (PgBouncer's transaction
 * pooling) stays behind on a server session the client no longer holds, and no notification reaches
 * the client. So when the connection's announced backend process is not the one that answers, the
 * notifier sends itself a probe notification through the data source; if that does not arrive
 * within {@link #PROBE_WAIT}, it warns, reports {@code notificationsUnavailable} and stops
 * listening for the runtime's life: the claimer's polls find the work.
 */
final class Notifier implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(Notifier.class);
  private static final int WAIT_MILLIS = 500;
  private static final long HEALTH_CHECK_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** How long a probe notification may take; generous, as a missed one only costs latency. */
  static final Duration PROBE_WAIT = Duration.ofSeconds(10);

  /** Sends a notification with a payload of its own on a channel, from another session. */
  @FunctionalInterface
  interface ProbeSender {
    void send(String channel, String token) throws SQLException;
  }

  private static final Duration PAUSE_BASE = Duration.ofMillis(50);
  private static final Duration PAUSE_CAP = Duration.ofSeconds(5);

  private final ConnectionFactory factory;
  private final ProbeSender probe;
  private final String channel;
  private final Events events;
  private final WakeSignal claimer;
  private final TimeSource time;
  private final Object lock = new Object();
  private volatile boolean running = true;

  /**
   * @param factory opens the dedicated LISTEN connection
   * @param probe sends the probe notification through the runtime's data source
   * @param claimer the claimer's wake-up, requested on every notification and (re)connection
   */
  Notifier(
      ConnectionFactory factory,
      ProbeSender probe,
      String channel,
      Events events,
      WakeSignal claimer,
      TimeSource time) {
    this.factory = factory;
    this.probe = probe;
    this.channel = channel;
    this.events = events;
    this.claimer = claimer;
    this.time = time;
  }

  void stop() {
    running = false;
    synchronized (lock) {
      lock.notifyAll();
    }
  }

  @Override
  public void run() {
    int failures = 0;
    while (running) {
      Connection conn = null;
      boolean broken = false;
      try {
        conn = factory.open();
        if (!conn.getAutoCommit()) {
          conn.setAutoCommit(true); // LISTEN inside an open transaction waits for its commit
        }
        boolean direct = Deployment.direct(conn); // before LISTEN, the session's last statement
        try (Statement s = conn.createStatement()) {
          s.execute(Coordination.listen(channel));
        }
        PGConnection pg = conn.unwrap(PGConnection.class);
        if (!direct && !probeArrives(pg)) {
          String reason =
              "the LISTEN connection goes through a connection pooler that does not keep its"
                  + " session (PgBouncer in transaction pooling mode?): a notification sent to it"
                  + " did not arrive within "
                  + PROBE_WAIT.toSeconds()
                  + " s. Relay stops listening and finds new work by polling (pollInterval); give"
                  + " it a direct connection to PostgreSQL with Relay.Builder.listenConnections"
                  + " (relay.direct-connection.url in the starter and relay serve)";
          log.warn("relay: {}", reason);
          events.notificationsUnavailable(reason);
          running = false;
          return;
        }
        failures = 0;
        log.debug("listening on {}", channel);
        events.listenerConnected();
        claimer.request(); // anything notified while nobody listened: poll now
        long lastCheck = time.nanoTime();
        while (running) {
          PGNotification[] notes = pg.getNotifications(WAIT_MILLIS);
          if (notes != null && notes.length > 0) {
            claimer.request();
            lastCheck = time.nanoTime();
          } else if (time.nanoTime() - lastCheck > HEALTH_CHECK_NANOS) {
            try (Statement s = conn.createStatement()) {
              s.execute(Coordination.PING);
            }
            lastCheck = time.nanoTime();
          }
        }
      } catch (SQLException | RuntimeException e) {
        broken = true;
        if (running) {
          failures++;
          log.warn("the LISTEN connection failed; reconnecting with backoff: {}", e.toString());
          events.listenerLost(e);
        }
      } finally {
        close(conn, broken);
      }
      if (running && failures > 0) {
        pause(failures);
      }
    }
  }

  /**
   * Sends a probe through the data source and waits for it on {@code pg}; other notifications that
   * arrive meanwhile wake the claimer as usual.
   */
  private boolean probeArrives(PGConnection pg) throws SQLException {
    String token = "relay-probe-" + UUID.randomUUID();
    probe.send(channel, token);
    long end = time.nanoTime() + PROBE_WAIT.toNanos();
    while (running && time.nanoTime() < end) {
      PGNotification[] notes = pg.getNotifications(WAIT_MILLIS);
      if (notes != null) {
        for (PGNotification n : notes) {
          if (token.equals(n.getParameter())) {
            return true;
          }
        }
        if (notes.length > 0) {
          claimer.request();
        }
      }
    }
    return !running; // stopping: no verdict, and nothing to warn about
  }

  private void close(Connection conn, boolean broken) {
    if (conn == null) {
      return;
    }
    try {
      if (!conn.isClosed()) {
        // A pooled connection must not keep listening for its next user. On a broken one this
        // fails through the pool's proxy, which is what makes a pool (HikariCP) evict it: the
        // error that broke it was raised on the unwrapped driver connection, out of its sight.
        try (Statement s = conn.createStatement()) {
          s.execute(Coordination.UNLISTEN_ALL);
        }
      }
    } catch (SQLException e) {
      log.debug("UNLISTEN failed (broken: {}); closing anyway", broken, e);
    }
    try {
      conn.close();
    } catch (SQLException e) {
      log.debug("closing the LISTEN connection failed", e);
    }
  }

  private void pause(int failures) {
    long millis = Math.max(1, Backoff.pause(PAUSE_BASE, PAUSE_CAP, failures).toMillis());
    synchronized (lock) {
      if (running) {
        try {
          lock.wait(millis);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          running = false;
        }
      }
    }
  }
}
