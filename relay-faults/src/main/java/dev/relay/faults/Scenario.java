package dev.relay.faults;

import dev.relay.Migrator;
import dev.relay.test.LoopbackProxy;
import dev.relay.test.PgBouncer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One run of the fault suite: starts a durable PostgreSQL, a proxy for the workers and one for the
 * producer, W worker JVMs and the producer; injects the faults of a schedule drawn from the seed;
 * then stops injecting, lets the workers recover, stops everything and runs the {@link Checker}.
 *
 * <p>The schedule (which fault, when, against which worker, for how long) is a function of the seed
 * and the configuration, so a seed repeats its faults; what the processes do around them depends on
 * timing, as in any real failure.
 */
final class Scenario implements AutoCloseable {
  /** The kinds of fault the scheduler injects. */
  enum Fault {
    KILL_WORKER,
    PAUSE_WORKER,
    PAUSE_AND_REPLACE,
    DROP_CONNECTIONS,
    STALL_CONNECTIONS,
    CRASH_POSTGRES,
    SLOW_RECEIVER,
    /**
     * A probe, not in the default set: SIGKILL a worker that just claimed, start its replacement
     * under the same worker ID, and lose the reply to the replacement's first claim COMMIT, so that
     * it recovers "its" claims from the stored rows (scenario {@code id-reuse-recover}).
     */
    RESTART_WITH_LOST_CLAIM_REPLY,
    /**
     * Topologies with a standby only: hold the replication stream back for the event's duration,
     * SIGKILL the primary, promote the standby and move the workers' and the producer's address to
     * it (once per run; later ones are skipped).
     */
    FAILOVER,
    /** Not scheduled: a worker's hook killed its own process after the receiver's acceptance. */
    SELF_KILL_AFTER_EFFECT,
    /** Not scheduled: the producer's proxy lost a COMMIT reply. */
    LOST_COMMIT_REPLY,
    /**
     * {@link Topology#HOSTS} only: a worker host's outbound or inbound traffic (drawn from the
     * seed) dropped by nftables for one to two and a half leases, then healed.
     */
    PARTITION_ONE_WAY,
    /** {@link Topology#HOSTS} only: a worker host cut off both ways, then healed. */
    PARTITION_BOTH_WAYS,
    /** {@link Topology#HOSTS} only: 10-40 % of a worker host's packets dropped at random. */
    PACKET_LOSS,
    /** 50-400 ms each way on every worker connection, added by the workers' proxy. */
    LATENCY,
    /**
     * The database clock jumps about one lease forwards or backwards (libfaketime), then back to
     * the real time.
     */
    CLOCK_JUMP
  }

  /** The faults that {@code --hosts} adds: partitions, packet loss and latency. */
  static final Set<Fault> NETWORK_FAULTS =
      EnumSet.of(
          Fault.PARTITION_ONE_WAY, Fault.PARTITION_BOTH_WAYS, Fault.PACKET_LOSS, Fault.LATENCY);

  /** How the workers reach PostgreSQL. */
  enum Topology {
    /** Through a loopback proxy to one server. */
    DIRECT,
    /**
     * Relay's pool through PgBouncer (transaction pooling, {@code prepareThreshold=0}) in front of
     * the proxy; LISTEN on a direct connection.
     */
    PGBOUNCER,
    /**
     * A primary with a streaming standby (PostgreSQL 15 binaries, for pg_basebackup), named in
     * {@code synchronous_standby_names}; the receiver on a server of its own, as another service.
     */
    FAILOVER_SYNC,
    /** As {@link #FAILOVER_SYNC}, with the standby asynchronous. */
    FAILOVER_ASYNC,
    /**
     * PostgreSQL and each worker on a host of their own: network namespaces on a bridge ({@link
     * Hosts}), PostgreSQL listening only on its host's address. The workers' Relay connections go
     * through the proxy on the harness's address, their receiver connections straight to the
     * database host; partitions and packet loss cut a worker host's one interface.
     */
    HOSTS;

    boolean failover() {
      return this == FAILOVER_SYNC || this == FAILOVER_ASYNC;
    }
  }

  /** One scheduled fault. */
  record Event(long atMillis, Fault fault, int worker, long durationMillis) {}

  /** A run's settings. */
  record Config(
      long seed,
      long faultMillis,
      int workers,
      int items,
      WorkerMain.Mode mode,
      Set<Fault> faults,
      int killPermille,
      int baseSlowMillis,
      long leaseMillis,
      long recoveryMillis,
      Topology topology,
      boolean operator,
      long dedupHorizonMillis) {
    /** The deduplication horizon of runs with the operator: short, so that work outlives it. */
    static final long OPERATOR_HORIZON_MILLIS = 30_000;

    /** The horizon of runs without the operator: longer than any run, as before the operator. */
    static final long DEFAULT_HORIZON_MILLIS = 3_600_000;

    static Config defaults(long seed, long faultMillis, int workers, int items) {
      return new Config(
          seed,
          faultMillis,
          workers,
          items,
          WorkerMain.Mode.SAFE,
          EnumSet.range(Fault.KILL_WORKER, Fault.SLOW_RECEIVER),
          30,
          0,
          3000,
          Math.max(90_000, faultMillis),
          Topology.DIRECT,
          true,
          OPERATOR_HORIZON_MILLIS);
    }

    /** The same run with or without the seeded operator (and its short horizon). */
    Config withOperator(boolean on) {
      return new Config(
          seed,
          faultMillis,
          workers,
          items,
          mode,
          faults,
          killPermille,
          baseSlowMillis,
          leaseMillis,
          recoveryMillis,
          topology,
          on,
          on ? OPERATOR_HORIZON_MILLIS : DEFAULT_HORIZON_MILLIS);
    }

    Config withLease(long leaseMs) {
      return new Config(
          seed,
          faultMillis,
          workers,
          items,
          mode,
          faults,
          killPermille,
          baseSlowMillis,
          leaseMs,
          recoveryMillis,
          topology,
          operator,
          dedupHorizonMillis);
    }

    Config withWorkers(int w) {
      return new Config(
          seed,
          faultMillis,
          w,
          items,
          mode,
          faults,
          killPermille,
          baseSlowMillis,
          leaseMillis,
          recoveryMillis,
          topology,
          operator,
          dedupHorizonMillis);
    }

    Config withMode(WorkerMain.Mode m, Set<Fault> f, int permille, int baseSlow) {
      return new Config(
          seed,
          faultMillis,
          workers,
          items,
          m,
          f,
          permille,
          baseSlow,
          leaseMillis,
          recoveryMillis,
          topology,
          operator,
          dedupHorizonMillis);
    }

    /** The same run in another topology, with the faults that belong to it. */
    Config withTopology(Topology t, Set<Fault> f) {
      return new Config(
          seed,
          faultMillis,
          workers,
          items,
          mode,
          f,
          killPermille,
          baseSlowMillis,
          leaseMillis,
          recoveryMillis,
          t,
          operator && !t.failover(),
          operator && !t.failover() ? dedupHorizonMillis : DEFAULT_HORIZON_MILLIS);
    }
  }

  private final Config config;
  private final PrintStream out;
  private final Path dir;
  private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
  private final List<Slot> slots = new ArrayList<>();
  private final Set<Process> stray = ConcurrentHashMap.newKeySet();
  private final Thread hook = new Thread(this::close, "faults-cleanup");
  private PgCluster pg;
  private PgCluster lostPrimary; // after a failover
  private PgCluster standby; // until a failover
  private PgCluster receiverPg; // failover topologies: the receiver's own server
  private LoopbackProxy replicationProxy;
  private PgBouncer bouncer;
  private boolean failedOver;
  private LoopbackProxy workerProxy;
  private LoopbackProxy producerProxy;
  private LoopbackProxy operatorProxy;
  private volatile boolean recovering;
  private String workerUrl;
  private String listenUrl;
  private String receiverUrl;
  private Thread monitor;
  private final AtomicInteger unexpectedExits = new AtomicInteger();
  private Hosts hosts; // Topology.HOSTS
  private FaultClock clock; // with CLOCK_JUMP
  private Disruptions disruptions;

  Scenario(Config config, PrintStream out) throws IOException {
    this.config = config;
    this.out = out;
    this.dir = Files.createTempDirectory("relay-faults-" + ProcessHandle.current().pid() + "-");
    for (Fault f : Fault.values()) {
      injected.put(f, new AtomicInteger());
    }
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** The schedule drawn from the seed: at least one of each enabled fault, then random ones. */
  static List<Event> schedule(Config config) {
    Random r = new Random(config.seed() ^ 0x5DEECE66DL);
    List<Fault> enabled = new ArrayList<>(config.faults());
    List<Event> events = new ArrayList<>();
    if (enabled.isEmpty()) {
      return events;
    }
    long start = 3000; // let the workers start first
    long span = Math.max(1, config.faultMillis() - start);
    int count = Math.max(enabled.size(), (int) (span / 3500));
    List<Fault> order = new ArrayList<>(enabled);
    java.util.Collections.shuffle(order, r);
    while (order.size() < count) {
      order.add(enabled.get(r.nextInt(enabled.size())));
    }
    for (int i = 0; i < count; i++) {
      long at = start + span * i / count;
      Fault f = order.get(i);
      long duration =
          switch (f) {
            case KILL_WORKER -> 300 + r.nextInt(1500);
            case PAUSE_WORKER -> config.leaseMillis() * 3 / 2 + r.nextInt(2000);
            case PAUSE_AND_REPLACE -> config.leaseMillis() + 1000 + r.nextInt(1000);
            case DROP_CONNECTIONS -> 0;
            case STALL_CONNECTIONS -> 1000 + r.nextInt(3000);
            case CRASH_POSTGRES -> 300 + r.nextInt(1500);
            case SLOW_RECEIVER -> 3000 + r.nextInt(3000);
            case RESTART_WITH_LOST_CLAIM_REPLY -> 1000 + r.nextInt(1000);
            case FAILOVER -> 2000 + r.nextInt(1000);
            case PARTITION_ONE_WAY, PARTITION_BOTH_WAYS, PACKET_LOSS, LATENCY, CLOCK_JUMP ->
                Disruptions.duration(f, config.leaseMillis(), r);
            default -> 0;
          };
      if (f == Fault.FAILOVER && events.stream().anyMatch(x -> x.fault() == Fault.FAILOVER)) {
        continue; // one standby: one failover per run
      }
      events.add(new Event(at, f, r.nextInt(config.workers()), duration));
    }
    return events;
  }

  /** Runs the scenario and checks it. */
  Checker.Result run() throws Exception {
    List<Event> events = schedule(config);
    out.printf(
        "relay-faults: seed %d, mode %s, %d workers, %d items, %d s of faults, %d scheduled%s%n",
        config.seed(),
        config.mode().arg(),
        config.workers(),
        config.items(),
        config.faultMillis() / 1000,
        events.size(),
        config.operator()
            ? ", with the operator (horizon " + config.dedupHorizonMillis() / 1000 + " s)"
            : "");
    out.println("reproduce: FaultsCommand --seed " + config.seed() + " (same settings)");
    Topology topology = config.topology();
    for (Fault f : config.faults()) {
      if (Disruptions.needsHosts(f) && topology != Topology.HOSTS) {
        throw new IllegalArgumentException(
            f.name().toLowerCase(Locale.ROOT)
                + " needs the workers on hosts of their own (--hosts)");
      }
    }
    int swept = Hosts.sweepStale();
    if (swept > 0) {
      out.println("removed " + swept + " network namespaces of runs whose harness is gone");
    }
    PgCluster.Placement placement = PgCluster.Placement.LOCAL;
    if (topology == Topology.HOSTS) {
      hosts = Hosts.create(config.workers());
      out.println(hosts);
      placement =
          new PgCluster.Placement(
              hosts.database(), hosts.exec(Hosts.DATABASE), hosts.cidr(), Map.of());
    }
    if (config.faults().contains(Fault.CLOCK_JUMP)) {
      clock = FaultClock.create(dir);
      placement =
          new PgCluster.Placement(
              placement.host(),
              placement.prefix(),
              placement.trustedNetwork(),
              clock.environment());
    }
    pg =
        topology.failover()
            ? PgCluster.start(dir, PgCluster.SYSTEM_PG15, placement)
            : PgCluster.start(dir, placement);
    prepare(pg);
    String receiverUrl = pg.jdbcUrl();
    if (topology.failover()) {
      startStandby(topology == Topology.FAILOVER_SYNC);
      receiverPg = PgCluster.start(dir);
      prepare(receiverPg);
      receiverUrl = receiverPg.jdbcUrl();
    }
    String proxyHost = hosts != null ? hosts.harness() : "127.0.0.1";
    workerProxy = LoopbackProxy.start(proxyHost, pg.host(), pg.port());
    producerProxy = LoopbackProxy.start(pg.host(), pg.port());
    // The operator's own proxy: to PostgreSQL's address, as the producer's.
    operatorProxy = config.operator() ? LoopbackProxy.start(pg.host(), pg.port()) : null;
    disruptions =
        new Disruptions(hosts, workerProxy, clock, config.seed(), config.leaseMillis(), out);
    String workerUrl = PgCluster.jdbcUrl(proxyHost, workerProxy.port()) + "&socketTimeout=30";
    String listenUrl = workerUrl;
    if (topology == Topology.PGBOUNCER) {
      // server_login_retry: after a crash of PostgreSQL, retry its login soon (default 15 s).
      bouncer =
          PgBouncer.start(
              "127.0.0.1", workerProxy.port(), "postgres", Map.of("server_login_retry", "1"));
      workerUrl = PgCluster.jdbcUrl(bouncer.port()) + "&socketTimeout=30&prepareThreshold=0";
      out.println(
          "PgBouncer " + bouncer.runningVersion() + " (transaction pooling) on " + bouncer.port());
    }
    this.workerUrl = workerUrl;
    this.listenUrl = listenUrl;
    this.receiverUrl = receiverUrl + "&socketTimeout=30";
    for (int i = 0; i < config.workers(); i++) {
      Slot slot = new Slot(i);
      slots.add(slot);
      slot.launch(config.killPermille());
    }
    if (topology.failover()) {
      // Each worker checks the replication at start: let them all see the primary with its standby.
      for (Slot slot : slots) {
        slot.awaitStarted(120_000);
      }
    }
    monitor = new Thread(this::monitor, "faults-monitor");
    monitor.setDaemon(true);
    monitor.start();

    Producer producer =
        new Producer(
            PgCluster.jdbcUrl(producerProxy.port()),
            producerProxy,
            config.seed() * 7919 + 1,
            config.items(),
            config.faultMillis() * 7 / 10,
            Math.max(2, config.items() / 25));
    if (config.operator()) {
      producer.withOperator(config.faultMillis());
    }
    Thread producing = new Thread(producer, "faults-producer");
    producing.start();
    Operator operator = null;
    Thread operating = null;
    if (config.operator()) {
      PGSimpleDataSource ods = new PGSimpleDataSource();
      ods.setUrl(PgCluster.jdbcUrl(operatorProxy.port()) + "&socketTimeout=30");
      operator = new Operator(ods, config.seed() * 104_729 + 3, 1500);
      operating = new Thread(operator, "faults-operator");
      operating.start();
    }

    long t0 = System.nanoTime();
    int skipped = 0;
    for (int i = 0; i < events.size(); i++) {
      Event e = events.get(i);
      // The first one of each kind always runs; later ones that blocking faults (pauses,
      // stalls) pushed past the fault phase are skipped.
      if (i >= config.faults().size()
          && (System.nanoTime() - t0) / 1_000_000 > config.faultMillis()) {
        skipped++;
        continue;
      }
      long wait = e.atMillis() - (System.nanoTime() - t0) / 1_000_000;
      if (wait > 0) {
        Thread.sleep(wait);
      }
      inject(e);
    }
    if (skipped > 0) {
      out.println("  " + skipped + " scheduled faults fell after the fault phase: skipped");
    }
    long rest = config.faultMillis() - (System.nanoTime() - t0) / 1_000_000;
    if (rest > 0) {
      Thread.sleep(rest);
    }
    producing.join(TimeUnit.MINUTES.toMillis(5));
    producer.stop();
    producing.join();
    if (operating != null) {
      operator.stop();
      operating.join();
    }

    // Recovery: no more faults; every worker runs; the operator lifts its pauses and resolves
    // failed work; wait while work keeps finishing, until nothing is ready or running.
    recovering = true;
    workerProxy.stall(false);
    disruptions.undoAll(config.workers());
    for (Slot s : slots) {
      s.resume();
      s.ensureRunning(0);
    }
    try (Connection c = connectDirect()) {
      setSlow(c, 0);
    }
    Thread sweeping = null;
    if (operator != null) {
      Operator op = operator;
      sweeping =
          new Thread(
              () -> {
                while (!Thread.currentThread().isInterrupted()) {
                  op.sweep();
                  try {
                    Thread.sleep(2000);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "faults-operator-sweep");
      sweeping.start();
    }
    Recovery recovery =
        new Recovery(this::connectDirect, config.leaseMillis(), out, this::workersUp);
    Recovery.Report report =
        recovery.await(
            config.recoveryMillis(),
            config.recoveryMillis() + Math.max(600_000, config.recoveryMillis()));
    out.println(report.summary());
    report.holding().forEach(l -> out.println("    " + l));
    if (sweeping != null) {
      sweeping.interrupt();
      sweeping.join();
      operator.finalPurge(75_000);
      producer.reusePurged(20);
      List<Operator.Action> actions = operator.history();
      out.println("operator: " + actions.size() + " actions");
      actions.stream()
          .filter(x -> x.status() == Operator.Status.UNCERTAIN)
          .limit(5)
          .forEach(x -> out.println("    uncertain " + x.tag() + " " + x.op() + ": " + x.detail()));
    }
    Thread.sleep(1500); // let ack-first's late effects land, if any
    monitor.interrupt();
    for (Slot s : slots) {
      s.stop();
    }
    for (Producer.Tx tx : producer.log()) {
      if (tx.status() == Producer.Status.UNCERTAIN) {
        injected.get(Fault.LOST_COMMIT_REPLY).incrementAndGet();
      }
    }
    try (Connection c = connectDirect();
        Connection rc =
            receiverPg == null ? null : DriverManager.getConnection(receiverPg.jdbcUrl())) {
      Checker.History history =
          new Checker.History(
              producer.log(),
              producer.reuses(),
              operator == null ? List.of() : operator.history(),
              report);
      Checker.Result result = new Checker(c, rc == null ? c : rc, history, counts()).check();
      // What the network and clock faults did (directions, sizes) goes with the figures.
      Map<String, Long> figures = new java.util.LinkedHashMap<>(result.figures());
      figures.putAll(disruptions.figures());
      return new Checker.Result(figures, result.faults(), result.violations(), result.recovery());
    }
  }

  /** Relay's schema and the receiver's tables on a new server. */
  private void prepare(PgCluster cluster) throws SQLException {
    try (Connection c = DriverManager.getConnection(cluster.jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute("SHOW fsync");
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setUrl(cluster.jdbcUrl());
      Migrator.migrate(ds, "relay");
      s.execute(FxSql.CREATE);
      setSlow(c, config.baseSlowMillis());
    }
  }

  /**
   * A streaming standby of {@link #pg} whose replication connection goes through a proxy; when
   * {@code synchronous}, the primary then names it in {@code synchronous_standby_names} and the run
   * waits until it streams as the synchronous standby.
   */
  private void startStandby(boolean synchronous) throws Exception {
    replicationProxy = LoopbackProxy.start("127.0.0.1", pg.port());
    standby = pg.standby(dir, replicationProxy.port());
    String want = synchronous ? "sync" : "async";
    try (Connection c = connectDirect();
        Statement s = c.createStatement()) {
      if (synchronous) {
        s.execute("ALTER SYSTEM SET synchronous_standby_names = '*'");
        s.execute("SELECT pg_reload_conf()");
      }
      long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
      while (System.nanoTime() < end) {
        try (ResultSet r =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
                    + " AND sync_state = '"
                    + want
                    + "'")) {
          r.next();
          if (r.getLong(1) == 1) {
            out.println("standby on " + standby.port() + " streams (" + want + ")");
            return;
          }
        }
        Thread.sleep(200);
      }
    }
    throw new IOException("the standby did not stream as " + want + "; log " + standby.log());
  }

  private Map<Fault, Integer> counts() {
    Map<Fault, Integer> m = new EnumMap<>(Fault.class);
    injected.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  /** Whether every worker slot has a live process (the recovery report's first question). */
  private boolean workersUp() {
    for (Slot slot : slots) {
      synchronized (slot) {
        if (slot.process == null || !slot.process.isAlive()) {
          return false;
        }
      }
    }
    return true;
  }

  private Connection connectDirect() throws SQLException {
    return DriverManager.getConnection(pg.jdbcUrl());
  }

  private static void setSlow(Connection c, int millis) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(FxSql.SET_SLOW)) {
      ps.setInt(1, millis);
      ps.executeUpdate();
    }
  }

  private void inject(Event e) throws Exception {
    Slot slot = slots.get(e.worker());
    out.printf(
        "  +%5.1fs %s%s%n",
        e.atMillis() / 1000.0,
        e.fault(),
        e.fault().name().contains("WORKER")
                || e.fault() == Fault.PAUSE_AND_REPLACE
                || Disruptions.needsHosts(e.fault())
            ? " w" + e.worker()
            : "");
    injected.get(e.fault()).incrementAndGet();
    switch (e.fault()) {
      case KILL_WORKER -> {
        slot.kill();
        Thread.sleep(e.durationMillis());
        slot.ensureRunning(config.killPermille());
      }
      case PAUSE_WORKER -> {
        awaitHolding(slot.id(), 5_000); // pause it with work in hand
        slot.signal("STOP");
        Thread.sleep(e.durationMillis()); // past the lease: its claims are taken over
        slot.signal("CONT");
      }
      case PAUSE_AND_REPLACE -> {
        // An orchestrator replaces a frozen worker under the same worker ID; the frozen one
        // wakes up later with claims that its replacement (same name) may now hold.
        // Frozen inside a receiver transaction (its effect's sleep running), the old process
        // holds the inbox row that its replacement's repeat then waits for: the unsafe completion
        // by name meets the replacement's claim. Partitions and clock jumps may overlap this, so
        // the waits are long; a miss is printed, not hidden.
        awaitHolding(slot.id(), 30_000);
        Process old = slot.process;
        // Only a slow receiver's effect can be seen running (and a failover's is elsewhere).
        boolean inEffect =
            config.baseSlowMillis() >= 100
                && !config.topology().failover()
                && awaitInEffect(WorkerMain.receiverSessionName(slot.id(), old.pid()), 10_000);
        slot.signal("STOP");
        Thread.sleep(e.durationMillis());
        slot.replace(config.killPermille());
        boolean takenOver = awaitClaimBy(slot.id(), 30_000);
        out.printf(
            "    %s paused %s a receiver transaction; its claims %s%n",
            slot.id(),
            inEffect ? "inside" : "outside",
            takenOver ? "taken over under the same ID" : "NOT taken over within 30 s");
        signal(old, "CONT");
        Thread.sleep(2000);
        old.destroyForcibly();
        stray.remove(old);
      }
      case DROP_CONNECTIONS -> workerProxy.dropAll();
      case STALL_CONNECTIONS -> {
        workerProxy.stall(true);
        Thread.sleep(e.durationMillis());
        workerProxy.stall(false);
      }
      case CRASH_POSTGRES -> {
        pg.crash();
        Thread.sleep(e.durationMillis());
        pg.startServer();
      }
      case SLOW_RECEIVER -> {
        try (Connection c = connectDirect()) {
          setSlow(c, (int) config.leaseMillis()); // past the kind's max run time
          Thread.sleep(e.durationMillis());
          setSlow(c, config.baseSlowMillis());
        } catch (SQLException ignored) {
          // PostgreSQL just restarted; the fault is skipped
        }
      }
      case FAILOVER -> failover(e.durationMillis());
      case PARTITION_ONE_WAY, PARTITION_BOTH_WAYS, PACKET_LOSS, LATENCY, CLOCK_JUMP ->
          disruptions.inject(e);
      case RESTART_WITH_LOST_CLAIM_REPLY -> {
        // Kill the worker while it holds claims with most of their lease left.
        awaitHolding(slot.id(), 15_000, config.leaseMillis() / 2);
        slot.kill();
        slot.launch(0);
        slot.awaitStarted(60_000);
        workerProxy.dropReplyAfterNextCommit(); // its next COMMIT: a claim (it holds nothing)
        boolean dropped = workerProxy.awaitCommitReplyDropped(Duration.ofSeconds(10));
        out.println("    claim COMMIT reply dropped: " + dropped);
        Thread.sleep(e.durationMillis());
      }
      default -> {}
    }
  }

  /**
   * Holds the replication stream back for {@code lagMillis} (an asynchronous standby falls behind
   * while commits go on returning; with a synchronous one, commits wait), kills the primary,
   * promotes the standby and moves the workers' and the producer's address to it.
   */
  private void failover(long lagMillis) throws Exception {
    if (standby == null || failedOver) {
      out.println("    (no standby left: skipped)");
      return;
    }
    failedOver = true;
    replicationProxy.stall(true);
    Thread.sleep(lagMillis);
    pg.crash();
    replicationProxy.close();
    replicationProxy = null;
    standby.promote();
    workerProxy.retarget("127.0.0.1", standby.port());
    producerProxy.retarget("127.0.0.1", standby.port());
    lostPrimary = pg;
    pg = standby;
    standby = null;
    out.println("    promoted the standby on " + pg.port() + "; the old primary stays down");
  }

  /** Waits until the worker with this ID holds a live claim. */
  private void awaitHolding(String workerId, long timeoutMillis) throws InterruptedException {
    awaitHolding(workerId, timeoutMillis, 1000);
  }

  /** Waits until the worker with this ID holds a claim with more than {@code leftMillis} left. */
  private void awaitHolding(String workerId, long timeoutMillis, long leftMillis)
      throws InterruptedException {
    awaitAny(
        "SELECT count(*) FROM relay.outbox WHERE state = 'running' AND claimed_by = ?"
            + " AND lease_until > clock_timestamp() + ? * interval '1 millisecond'",
        timeoutMillis,
        50,
        workerId,
        leftMillis);
  }

  /**
   * Waits until a session named {@code applicationName} runs the receiver's effect (its sleep,
   * inside the inbox transaction); false if none did within the time.
   */
  private boolean awaitInEffect(String applicationName, long timeoutMillis)
      throws InterruptedException {
    return awaitAny(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?"
            + " AND state = 'active' AND query = ?",
        timeoutMillis,
        20,
        applicationName,
        FxSql.SLOW);
  }

  /**
   * Waits until a worker with this ID holds a running claim taken over from its frozen predecessor;
   * false if none within the time.
   */
  private boolean awaitClaimBy(String workerId, long timeoutMillis) throws InterruptedException {
    return awaitAny(
        "SELECT count(*) FROM relay.outbox o WHERE o.state = 'running'"
            + " AND o.claimed_by = ? AND o.lease_until > clock_timestamp()"
            + " AND EXISTS (SELECT 1 FROM relay.attempt a WHERE a.work_id = o.work_id"
            + " AND a.ending = 'lease_expired' AND a.worker = ?)",
        timeoutMillis,
        100,
        workerId,
        workerId);
  }

  /**
   * Runs {@code countSql} on a direct connection every {@code pauseMillis} until it counts more
   * than zero (true) or {@code timeoutMillis} pass (false); a failed attempt (PostgreSQL
   * restarting, a partition) is tried again.
   */
  private boolean awaitAny(String countSql, long timeoutMillis, long pauseMillis, Object... params)
      throws InterruptedException {
    long end = System.nanoTime() + timeoutMillis * 1_000_000;
    while (System.nanoTime() < end) {
      try (Connection c = connectDirect();
          PreparedStatement ps = c.prepareStatement(countSql)) {
        for (int i = 0; i < params.length; i++) {
          ps.setObject(i + 1, params[i]);
        }
        try (ResultSet r = ps.executeQuery()) {
          r.next();
          if (r.getLong(1) > 0) {
            return true;
          }
        }
      } catch (SQLException e) {
        // retry
      }
      Thread.sleep(pauseMillis);
    }
    return false;
  }

  /** Restarts workers whose process ended on its own (the self-kill hook). */
  private void monitor() {
    while (!Thread.currentThread().isInterrupted()) {
      try {
        Thread.sleep(300);
      } catch (InterruptedException e) {
        return;
      }
      for (Slot s : slots) {
        synchronized (s) {
          if (!s.stopping && s.process != null && !s.process.isAlive() && !s.expectDead) {
            int exit = s.process.exitValue();
            if (exit == 137) {
              injected.get(Fault.SELF_KILL_AFTER_EFFECT).incrementAndGet();
            } else {
              out.printf("  worker w%d exited with %d (see its log): restarting%n", s.index, exit);
              unexpectedExits.incrementAndGet();
              if (unexpectedExits.get() > 20) {
                continue; // something is broken: the checker will report the unfinished work
              }
            }
            try {
              s.launch(recovering ? 0 : config.killPermille());
            } catch (IOException e) {
              out.println("  cannot restart w" + s.index + ": " + e);
            }
          }
        }
      }
    }
  }

  private static void signal(Process p, String sig) {
    if (p == null || !p.isAlive()) {
      return;
    }
    try {
      new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).start().waitFor();
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** One worker position: an ID (reused across restarts) and its current process. */
  private final class Slot {
    final int index;
    Process process;
    boolean expectDead;
    boolean stopping;
    int launches;
    Path log;

    Slot(int index) {
      this.index = index;
    }

    String id() {
      return "w" + index;
    }

    synchronized void launch(int permille) throws IOException {
      launches++;
      List<String> cmd = new ArrayList<>(hosts != null ? hosts.exec(id()) : List.of());
      cmd.addAll(command(permille));
      if (!listenUrl.equals(workerUrl)) {
        cmd.add("--listen-url");
        cmd.add(listenUrl);
      }
      log = dir.resolve(id() + "-" + launches + ".log");
      process =
          new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      stray.add(process);
      expectDead = false;
    }

    private List<String> command(int permille) {
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      return List.of(
          java,
          "-Xmx192m",
          "-XX:+UseSerialGC",
          "-XX:TieredStopAtLevel=1",
          "-Duser.timezone=America/St_Johns",
          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
          "-cp",
          System.getProperty("java.class.path"),
          WorkerMain.class.getName(),
          "--url",
          workerUrl,
          "--receiver-url",
          receiverUrl,
          "--worker-id",
          id(),
          "--mode",
          config.mode().arg(),
          "--seed",
          Long.toString(config.seed() * 1_000_003L + index * 1000L + launches),
          "--kill-permille",
          Integer.toString(permille),
          "--lease-ms",
          Long.toString(config.leaseMillis()),
          "--concurrency",
          "4",
          "--parent-pid",
          Long.toString(ProcessHandle.current().pid()),
          "--dedup-horizon-ms",
          Long.toString(config.dedupHorizonMillis()),
          "--receiver-reads-claims",
          Boolean.toString(receiverPg == null));
    }

    /** Waits until the current process printed that its Relay started. */
    void awaitStarted(long timeoutMillis) throws InterruptedException {
      long end = System.nanoTime() + timeoutMillis * 1_000_000;
      while (System.nanoTime() < end) {
        try {
          if (Files.readString(log).contains(" started, mode ")) {
            return;
          }
        } catch (IOException e) {
          // not written yet
        }
        Thread.sleep(50);
      }
    }

    synchronized void kill() {
      expectDead = true;
      if (process != null) {
        process.destroyForcibly();
        try {
          process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    synchronized void ensureRunning(int permille) throws IOException {
      if (process == null || !process.isAlive()) {
        launch(permille);
      }
    }

    /** Starts a new process under the same ID, leaving the old (paused) one to the caller. */
    synchronized void replace(int permille) throws IOException {
      launch(permille);
    }

    synchronized void signal(String sig) {
      Scenario.signal(process, sig);
    }

    synchronized void resume() {
      Scenario.signal(process, "CONT");
    }

    void stop() throws InterruptedException {
      Process p;
      synchronized (this) {
        stopping = true;
        p = process;
      }
      if (p != null && p.isAlive()) {
        p.destroy(); // SIGTERM: Relay closes gracefully
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          p.waitFor(10, TimeUnit.SECONDS);
        }
      }
    }
  }

  /** Stops every process this run started and deletes its directory. */
  @Override
  public synchronized void close() {
    if (monitor != null) {
      monitor.interrupt();
    }
    for (Process p : stray) {
      signal(p, "CONT");
      p.destroyForcibly();
    }
    for (Process p : stray) {
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    stray.clear();
    if (workerProxy != null) {
      workerProxy.close();
    }
    if (producerProxy != null) {
      producerProxy.close();
    }
    if (operatorProxy != null) {
      operatorProxy.close();
    }
    if (bouncer != null) {
      bouncer.close();
      bouncer = null;
    }
    if (replicationProxy != null) {
      replicationProxy.close();
      replicationProxy = null;
    }
    for (PgCluster cluster : new PgCluster[] {pg, standby, lostPrimary, receiverPg}) {
      if (cluster != null) {
        cluster.close();
      }
    }
    pg = null;
    standby = null;
    lostPrimary = null;
    receiverPg = null;
    if (hosts != null) {
      hosts.close(); // after the server's own stop: whatever still runs there is killed
      hosts = null;
    }
    if (!Boolean.getBoolean("faults.keep")) {
      Files2.deleteTree(dir);
    }
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // already shutting down: this is the hook
    }
  }

  Path dir() {
    return dir;
  }

  /** How many worker processes (of every launch) printed a line containing {@code text}. */
  long workerLogsContaining(String text) throws IOException {
    try (var logs = Files.list(dir)) {
      return logs.filter(f -> f.getFileName().toString().matches("w\\d+-\\d+\\.log"))
          .filter(
              f -> {
                try {
                  return Files.readString(f).contains(text);
                } catch (IOException e) {
                  return false;
                }
              })
          .count();
    }
  }
}
