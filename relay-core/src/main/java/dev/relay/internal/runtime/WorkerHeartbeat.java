package dev.relay.internal.runtime;

import dev.relay.Migrator;
import dev.relay.Relay;
import dev.relay.RelayConfig;
import dev.relay.RelayException;
import dev.relay.internal.store.WorkerRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this runtime's row in the {@code worker} table: registered at start, its heartbeat renewed
 * every renew interval (the lease keeper's cadence), deleted on a clean shutdown. The row tells
 * {@code relay migrate} which library versions are live, so a contract step waits for the rolling
 * upgrade to finish. A failed heartbeat is logged and tried again at the next beat; the row is
 * stale (counts as gone) {@link #staleAfter} after its last heartbeat.
 */
final class WorkerHeartbeat implements Runnable {
  private static final Logger log = LoggerFactory.getLogger(WorkerHeartbeat.class);

  private final WorkerRegistry registry;
  private final TrackedConnections connections;
  private final Events events;
  private final WorkerRegistry.Registration registration;
  private final long intervalMillis;
  private final Object wake = new Object();
  private volatile boolean running = true;

  WorkerHeartbeat(
      RelayConfig config, WorkerRegistry registry, TrackedConnections connections, Events events) {
    this.registry = registry;
    this.connections = connections;
    this.events = events;
    this.intervalMillis = config.renewInterval().toMillis();
    this.registration =
        new WorkerRegistry.Registration(
            config.workerId(),
            Relay.version(),
            Migrator.LATEST_VERSION,
            host(),
            staleAfter(config));
  }

  /** How long after its last heartbeat a row counts as gone: one lease and two beats. */
  static Duration staleAfter(RelayConfig config) {
    return config.lease().plus(config.renewInterval().multipliedBy(2));
  }

  /**
   * The machine's name and this process's ID, for an operator to find the worker: {@code HOSTNAME}
   * when the environment has it (containers set it), else the name the operating system gives (a
   * shell does not export {@code HOSTNAME}, and systemd does not set it).
   */
  static String host() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      host = localHostName();
    }
    return (host == null || host.isBlank() ? "" : host + " ")
        + "pid "
        + ProcessHandle.current().pid();
  }

  private static String localHostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException | RuntimeException e) {
      return null; // no name to give: the process ID alone
    }
  }

  /**
   * Registers this runtime if the schema has the table (a schema built by Flyway from the plain
   * files before version 17 has none); returns whether the heartbeat should run.
   */
  boolean register() {
    try (Connection c = connections.open("register worker")) {
      if (!registry.available(c)) {
        log.warn(
            "the schema has no worker table (version 17): this worker is not registered, so"
                + " relay migrate cannot see it during a rolling upgrade");
        return false;
      }
      registry.register(c, registration);
      return true;
    } catch (SQLException e) {
      throw dev.relay.internal.jdbc.SqlErrors.translate("register worker", e);
    }
  }

  /** One heartbeat; false when it failed (logged, reported, tried again at the next beat). */
  boolean runOnce() {
    try (Connection c = connections.open("worker heartbeat")) {
      registry.heartbeat(c, registration);
      return true;
    } catch (RelayException | SQLException e) {
      log.warn("worker heartbeat failed; trying again in {} ms: {}", intervalMillis, e.toString());
      events.error("worker heartbeat", e);
      return false;
    }
  }

  /** Beats until {@link #stop}, then deletes this runtime's row (a clean shutdown). */
  @Override
  public void run() {
    while (running) {
      synchronized (wake) {
        try {
          if (running) {
            wake.wait(intervalMillis);
          }
        } catch (InterruptedException e) {
          return;
        }
      }
      if (running) {
        runOnce();
      }
    }
    deregister();
  }

  /** Stops the beats; the thread then deletes the row and ends. */
  void stop() {
    running = false;
    synchronized (wake) {
      wake.notifyAll();
    }
  }

  /** Deletes this runtime's row; a failure is logged (the row then goes stale on its own). */
  void deregister() {
    try (Connection c = connections.open("deregister worker")) {
      registry.deregister(c, registration.workerId());
    } catch (RelayException | SQLException e) {
      log.warn(
          "could not remove this worker's registration; it counts as gone after {}: {}",
          registration.staleAfter(),
          e.toString());
    }
  }
}
