package dev.relay.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Claim;
import dev.relay.CommitOutcomeUnknownException;
import dev.relay.KindPolicy;
import dev.relay.Milestone;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.KeyedHistory;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * One worker process of the fault suite: a Relay runtime whose handler calls the recording
 * receiver. The harness starts it as a separate JVM, kills, pauses and restarts it.
 *
 * <p>Relay's own connections go through the harness's loopback proxy (so they can be dropped and
 * stalled); the receiver, another service in a real system, connects to PostgreSQL directly. The
 * handler records a raw call, then applies the message through {@link Inbox} (with a {@link Fence}
 * and, for keyed work, {@link KeyedHistory}) in one receiver transaction, and returns done with its
 * claim generation as the result. A hook may SIGKILL the process between the receiver's acceptance
 * and the completion write.
 *
 * <p>Modes (argument {@code --mode}): {@code safe}; {@code ack-first}, which returns done and
 * applies the effect later on another thread (lost effects after a kill); {@code unguarded}, which
 * also completes the row with its own unguarded SQL by worker name (stale writes accepted when
 * worker IDs are reused).
 */
public final class WorkerMain {
  /**
   * The worker's log of how it recovers (the rest of Relay logs at WARN here): work taken over
   * after an expired lease, and claims or outcomes whose COMMIT was cut off, which the runtime then
   * resolves from the stored rows. Through the public event contract, so the suite names no
   * internal class.
   */
  private static final RelayEventListener RECOVERY_LOG =
      new RelayEventListener() {
        @Override
        public void reclaimedAfterLeaseExpiry(Claim claim, String previousOwner) {
          System.out.println(
              claim.workId()
                  + " generation "
                  + claim.generation()
                  + " taken over from "
                  + previousOwner
                  + " (lease expired)");
        }

        @Override
        public void failoverUnsafe(String reason) {
          System.out.println("failover unsafe: " + reason);
        }

        @Override
        public void notificationsUnavailable(String reason) {
          System.out.println("notifications unavailable: " + reason);
        }

        @Override
        public void error(String what, Throwable error) {
          if (error instanceof CommitOutcomeUnknownException) {
            System.out.println(what + ": commit outcome unknown, re-reading the stored rows");
          }
        }

        @Override
        public void abandoned(Claim claim, String operation) {
          System.out.println(
              claim.workId()
                  + " generation "
                  + claim.generation()
                  + ": "
                  + operation
                  + " given up after its lease passed (kept in the attempt history)");
        }
      };

  static final String KIND = "fx";
  static final String CONSUMER = "faults";

  private final String workerId;
  private final Mode mode;
  private final int killPermille;
  private final Random random;
  private final HikariDataSource receiverPool;
  private final Inbox inbox = Inbox.create();
  private final Fence fence = Fence.create();
  private final KeyedHistory history = KeyedHistory.create();
  private final long pid = ProcessHandle.current().pid();
  private final boolean readsClaims;

  private WorkerMain(
      String workerId,
      Mode mode,
      int killPermille,
      long seed,
      HikariDataSource pool,
      boolean readsClaims) {
    this.workerId = workerId;
    this.mode = mode;
    this.killPermille = killPermille;
    this.random = new Random(seed);
    this.receiverPool = pool;
    this.readsClaims = readsClaims;
  }

  /**
   * Runs a worker until SIGTERM or until its parent process ends.
   *
   * @param args {@code --url U [--listen-url U] --receiver-url U --worker-id W --mode M --seed S
   *     --kill-permille K --lease-ms L --concurrency C --parent-pid P [--dedup-horizon-ms H]
   *     [--receiver-reads-claims true]}; {@code --listen-url} is the direct connection for LISTEN
   *     when {@code --url} goes through PgBouncer (default: {@code --url}); {@code
   *     --dedup-horizon-ms} the kind's deduplication horizon (default one hour); {@code
   *     --receiver-reads-claims} makes the receiver record each call's claim time from Relay's row
   *     (only where it shares Relay's server)
   * @throws Exception on a start-up failure
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> a = Args.parse(args);
    String url = a.get("url");
    String listenUrl = a.getOrDefault("listen-url", url);
    String workerId = a.get("worker-id");
    Mode mode = Mode.parse(a.getOrDefault("mode", "safe"));
    long seed = Long.parseLong(a.getOrDefault("seed", "1"));
    int killPermille = Integer.parseInt(a.getOrDefault("kill-permille", "0"));
    Duration lease = Duration.ofMillis(Long.parseLong(a.getOrDefault("lease-ms", "3000")));
    int concurrency = Integer.parseInt(a.getOrDefault("concurrency", "4"));
    long parentPid = Long.parseLong(a.getOrDefault("parent-pid", "0"));
    Duration horizon =
        Duration.ofMillis(Long.parseLong(a.getOrDefault("dedup-horizon-ms", "3600000")));
    boolean readsClaims = Boolean.parseBoolean(a.getOrDefault("receiver-reads-claims", "false"));
    watchParent(parentPid);

    HikariDataSource relayPool = pool(url, "relay-" + workerId, concurrency + 4);
    HikariDataSource receiverPool =
        pool(a.get("receiver-url"), "receiver-" + workerId, concurrency + 2);
    WorkerMain worker =
        new WorkerMain(workerId, mode, killPermille, seed, receiverPool, readsClaims);
    KindPolicy policy =
        KindPolicy.DEFAULT
            .withBackoff(Duration.ofMillis(50), Duration.ofSeconds(1))
            .withMaxAttempts(1000)
            // Relay refuses a retry window longer than the horizon when unknown outcomes are
            // retried.
            .withMaxElapsed(
                horizon.compareTo(Duration.ofHours(1)) < 0 ? horizon : Duration.ofHours(1))
            .withDedupHorizon(horizon)
            // Short enough that a slow receiver (SLOW_RECEIVER) passes it and the lease lapses.
            .withMaxRunTime(lease.multipliedBy(3).dividedBy(4));
    Supplier<Relay> build =
        () ->
            Relay.builder(relayPool)
                .workerId(workerId)
                .handle(KIND, policy, worker::handle)
                .lease(lease)
                .concurrency(concurrency)
                .bufferSize(concurrency)
                .batchSize(concurrency)
                .pollInterval(Duration.ofMillis(200))
                .shutdownGrace(Duration.ofSeconds(3))
                .listenConnections(() -> DriverManager.getConnection(listenUrl))
                .listener(RECOVERY_LOG)
                .build();
    AtomicReference<Relay> current = new AtomicReference<>();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  Relay r = current.get();
                  if (r != null) {
                    r.close();
                  }
                  relayPool.close();
                  receiverPool.close();
                  stopped.countDown();
                }));
    while (true) {
      // A failed start closes its runtime: each attempt needs a new one. (Retrying start() on
      // the closed one kept a live process that never claimed: the stuck recoveries of seed
      // 538019 under load, docs/reliability.md.)
      Relay relay = build.get();
      current.set(relay);
      try {
        relay.start(); // registers the kind: may fail while PostgreSQL restarts
        break;
      } catch (RuntimeException e) {
        System.err.println("start failed, retrying with a new runtime: " + e);
        Thread.sleep(500);
      }
    }
    System.out.println("worker " + workerId + " pid " + worker.pid + " started, mode " + mode);
    stopped.await();
  }

  /**
   * The {@code application_name} of the receiver's sessions of worker {@code workerId}'s process.
   */
  static String receiverSessionName(String workerId, long pid) {
    return sessionName("receiver-" + workerId, pid);
  }

  private static String sessionName(String poolName, long pid) {
    return poolName + "-" + pid;
  }

  private static HikariDataSource pool(String url, String name, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setPoolName(name);
    // The harness finds this process's sessions by name (a pause inside a receiver transaction).
    config.addDataSourceProperty(
        "ApplicationName", sessionName(name, ProcessHandle.current().pid()));
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(5_000);
    config.setValidationTimeout(2_000);
    config.setInitializationFailTimeout(-1); // PostgreSQL may be restarting
    return new HikariDataSource(config);
  }

  private static void watchParent(long parentPid) {
    if (parentPid <= 0) {
      return;
    }
    Thread t =
        new Thread(
            () -> {
              while (ProcessHandle.of(parentPid).map(ProcessHandle::isAlive).orElse(false)) {
                try {
                  Thread.sleep(1000);
                } catch (InterruptedException e) {
                  return;
                }
              }
              Runtime.getRuntime().halt(3); // the harness is gone: do not outlive it
            },
            "parent-watch");
    t.setDaemon(true);
    t.start();
  }

  private Outcome handle(Claim claim) throws Exception {
    Item item = Item.parse(claim.payload());
    if (mode == Mode.ACK_FIRST) {
      // UNSAFE: report done first, apply later. A kill in between loses the effect.
      boolean kill = chance();
      Thread later =
          new Thread(
              () -> {
                try {
                  Thread.sleep(400); // long after the completer wrote done
                  if (kill) {
                    killSelf();
                  }
                  deliver(claim, item);
                } catch (Exception e) {
                  // lost: nobody retries an effect whose work is already done
                }
              });
      later.start();
      return Outcome.done(
          "ack-first", "{\"generation\":" + claim.generation() + "}", Milestone.ACCEPTED);
    }
    Outcome outcome = deliver(claim, item);
    if (outcome instanceof Outcome.Done && chance()) {
      killSelf(); // between the receiver's acceptance and the completion write
    }
    if (mode == Mode.UNGUARDED && outcome instanceof Outcome.Done) {
      try (Connection c = receiverPool.getConnection();
          PreparedStatement ps = c.prepareStatement(FxSql.UNGUARDED_COMPLETE)) {
        ps.setLong(1, claim.generation());
        ps.setString(2, claim.workId());
        ps.setString(3, workerId);
        ps.executeUpdate();
      }
    }
    return outcome;
  }

  private synchronized boolean chance() {
    return killPermille > 0 && random.nextInt(1000) < killPermille;
  }

  private void killSelf() {
    System.out.println("hook: SIGKILL self after the receiver's acceptance");
    System.out.flush();
    try {
      new ProcessBuilder("kill", "-9", Long.toString(pid)).start().waitFor();
      Thread.sleep(5000);
    } catch (IOException | InterruptedException e) {
      // fall through
    }
    Runtime.getRuntime().halt(137);
  }

  /** The receiver: a raw record, then inbox + fence + strict history in one transaction. */
  private Outcome deliver(Claim claim, Item item) throws SQLException {
    try (Connection c = receiverPool.getConnection()) {
      c.setAutoCommit(true);
      try (PreparedStatement ps =
          c.prepareStatement(readsClaims ? FxSql.RAW_WITH_CLAIM : FxSql.RAW)) {
        ps.setString(1, claim.workId());
        ps.setLong(2, claim.generation());
        ps.setString(3, workerId);
        ps.setLong(4, pid);
        if (readsClaims) {
          ps.setString(5, claim.workId());
          ps.setLong(6, claim.generation());
        }
        ps.executeUpdate();
      }
      c.setAutoCommit(false);
      try {
        inbox.process(
            c,
            CONSUMER,
            claim.workId(),
            claim.payload(),
            tx -> {
              try (Statement s = tx.createStatement()) {
                s.execute(FxSql.SLOW);
              }
              if (claim.orderingKey() != null) {
                KeyedHistory.Decision d =
                    history.offer(
                        tx,
                        CONSUMER,
                        claim.orderingKey(),
                        claim.sequence(),
                        claim.previousDeliveredSequence());
                if (d.status() == KeyedHistory.Status.HOLD) {
                  throw new HoldException();
                }
                if (d.status() == KeyedHistory.Status.APPLY) {
                  insert(tx, FxSql.APPLIED, claim.orderingKey(), claim.sequence(), claim.workId());
                } else {
                  insert(
                      tx,
                      FxSql.ANOMALY,
                      claim.workId(),
                      "first delivery behind position "
                          + d.lastApplied()
                          + " (sequence "
                          + claim.sequence()
                          + ", generation "
                          + claim.generation()
                          + ")");
                }
              }
              FenceResult f = fence.advance(tx, item.resource(), item.token());
              if (f.accepted()) {
                insert(tx, FxSql.FENCED_WRITE, item.resource(), item.token(), claim.workId());
              } else {
                insert(
                    tx,
                    FxSql.FENCE_REFUSED,
                    item.resource(),
                    item.token(),
                    f.highestToken(),
                    claim.workId());
              }
              insert(tx, FxSql.INBOX_EFFECT, claim.workId(), claim.generation());
              return "{\"applied_by\":" + claim.generation() + "}";
            });
        c.commit();
      } catch (RuntimeException | SQLException e) {
        rollbackQuietly(c);
        if (isHold(e)) {
          return Outcome.retry(
                  "held: an earlier sequence of the key is not applied yet",
                  Outcome.Effect.NOT_DELIVERED)
              .after(Duration.ofMillis(100));
        }
        throw e;
      }
    }
    return Outcome.done(
        "fx:" + claim.workId(), "{\"generation\":" + claim.generation() + "}", Milestone.DELIVERED);
  }

  private static boolean isHold(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof HoldException) {
        return true;
      }
    }
    return false;
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // the connection is gone; the transaction with it
    }
  }

  private static void insert(Connection c, String sql, Object... values) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < values.length; i++) {
        ps.setObject(i + 1, values[i]);
      }
      ps.executeUpdate();
    }
  }

  /** Thrown inside the inbox effect to roll back an item that must wait for its predecessor. */
  private static final class HoldException extends Exception {
    private static final long serialVersionUID = 1L;

    HoldException() {
      super("hold", null, false, false);
    }
  }

  /** How the worker handles work: correctly, or in one of the deliberately unsafe ways. */
  enum Mode {
    SAFE,
    ACK_FIRST,
    UNGUARDED;

    static Mode parse(String s) {
      return valueOf(s.toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
    }

    String arg() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
  }
}
