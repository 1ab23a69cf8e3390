package dev.relay.bench;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.Work;
import java.lang.management.ManagementFactory;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

/** Relay's scenarios: enqueue, burn-down, steady load, growth and memory. */
final class RelayBench {
  static final String SCHEMA = "relay_bench";
  static final String KIND = "bench.noop";

  /** The queue the backlogs are loaded into (the work table's default). */
  static final String QUEUE = "default";

  /** A second queue, empty, that the two-queue burn-down serves as well. */
  static final String OTHER_QUEUE = "bench-other";

  private final BenchDb db;
  private final Sizes sizes;
  private final BenchIds ids;
  private final Report report;

  RelayBench(BenchDb db, Sizes sizes, BenchIds ids, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.ids = ids;
    this.report = report;
  }

  void migrate() {
    Migrator.migrate(db.pool(), SCHEMA);
  }

  /**
   * Empties the work, its history, the tombstones and the attempts. Completed work moves to the
   * history table and leaves its tombstone, which hold their IDs: a run that left them there would
   * make the next run's IDs already taken.
   */
  void truncate() throws SQLException {
    db.exec(
        "TRUNCATE "
            + SCHEMA
            + ".outbox, "
            + SCHEMA
            + ".work_history, "
            + SCHEMA
            + ".tombstone, "
            + SCHEMA
            + ".attempt CASCADE");
  }

  void vacuum() throws SQLException {
    db.exec(
        "VACUUM ANALYZE " + SCHEMA + ".outbox",
        "VACUUM ANALYZE " + SCHEMA + ".work_history",
        "VACUUM ANALYZE " + SCHEMA + ".tombstone",
        "VACUUM ANALYZE " + SCHEMA + ".attempt");
  }

  /** A tombstone for every history row, as completion writes one with each row it moves. */
  private static final String TOMBSTONES_OF_HISTORY =
      "INSERT INTO "
          + SCHEMA
          + ".tombstone (work_id, kind, payload_digest, last_generation, final_state, outcome,"
          + " purged_at) SELECT work_id, kind, "
          + SCHEMA
          + ".payload_digest(payload), 1, 'done', 'delivered', completed_at FROM "
          + SCHEMA
          + ".work_history";

  /** Rows a day of the history kept while enqueue runs ({@code --enqueue-history-days}). */
  static final int ENQUEUE_HISTORY_ROWS_PER_DAY = 100_000;

  /**
   * Enqueue's setting: empty tables, then {@code historyDays} past days of finished work kept (each
   * row with its tombstone, as completion leaves them): what an ID must be checked against. {@link
   * EnqueueComparison} then runs the rounds.
   */
  void enqueueSetUp(int historyDays) throws SQLException {
    truncate();
    if (historyDays > 0) {
      long t0 = System.nanoTime();
      db.exec(
          "SELECT "
              + SCHEMA
              + ".add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - d)"
              + " FROM generate_series(1, "
              + historyDays
              + ") AS d",
          "INSERT INTO "
              + SCHEMA
              + ".work_history (work_id, kind, payload, state, claim_generation, attempts,"
              + " created_at, available_at, completed_at, outcome)"
              + " SELECT 'h' || d || '-' || g, '"
              + KIND
              + "', jsonb_build_object('n', g), 'done', 1, 1, t, t, t, 'delivered'"
              + " FROM generate_series(1, "
              + historyDays
              + ") AS d, generate_series(1, "
              + ENQUEUE_HISTORY_ROWS_PER_DAY
              + ") AS g, LATERAL (SELECT ((clock_timestamp() AT TIME ZONE 'UTC')::date - d)"
              + "::timestamp AT TIME ZONE 'UTC' + g * (interval '1 day' / "
              + ENQUEUE_HISTORY_ROWS_PER_DAY
              + ") AS t) AS at",
          TOMBSTONES_OF_HISTORY,
          "VACUUM ANALYZE " + SCHEMA + ".work_history",
          "VACUUM ANALYZE " + SCHEMA + ".tombstone",
          "CHECKPOINT");
      report.log(
          "enqueue: "
              + historyDays
              + " past days of history kept, "
              + ENQUEUE_HISTORY_ROWS_PER_DAY
              + " rows each with their tombstones (loaded in "
              + Math.round(seconds(t0))
              + " s)");
    }
  }

  /**
   * One round of enqueue: {@code items} items, {@code perTx} per transaction, into an emptied work
   * table (the history kept stays); items/s. {@code round} makes the IDs of each round new.
   */
  double enqueueRound(int items, int perTx, int round) throws SQLException {
    emptyWorkTable();
    return enqueueRun(Outbox.builder().schema(SCHEMA).build(), items, perTx, round);
  }

  /** Empties the work table only (enqueue completes nothing): the history kept stays. */
  private void emptyWorkTable() throws SQLException {
    db.exec("TRUNCATE " + SCHEMA + ".outbox, " + SCHEMA + ".attempt CASCADE");
  }

  private double enqueueRun(Outbox outbox, int items, int perTx, int run) throws SQLException {
    try (Connection c = db.pool().getConnection()) {
      c.setAutoCommit(false);
      long t0 = System.nanoTime();
      List<Work> batch = new ArrayList<>(perTx);
      for (int i = 0; i < items; i++) {
        batch.add(Work.of("e" + run + "-" + i, KIND, "{\"n\":" + i + "}"));
        if (batch.size() == perTx || i == items - 1) {
          if (batch.size() == 1) {
            outbox.enqueue(c, batch.get(0));
          } else {
            outbox.enqueueAll(c, batch);
          }
          c.commit();
          batch.clear();
        }
      }
      return items / seconds(t0);
    }
  }

  void preload(int jobs) throws SQLException {
    try (Connection c = db.pool().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO "
                    + SCHEMA
                    + ".outbox (work_id, kind, payload) SELECT "
                    + ids.sql("b-", "g")
                    + ", ?,"
                    + " jsonb_build_object('n', g) FROM generate_series(1, ?) AS g")) {
      ps.setString(1, KIND);
      ps.setInt(2, jobs);
      ps.executeUpdate();
    }
    db.exec("ANALYZE " + SCHEMA + ".outbox", "CHECKPOINT");
  }

  /** Relay as the burn-downs run it (NOTIFY on), with {@code listener}: the history part's. */
  Relay.Builder builder(RelayEventListener listener, String workerId) {
    return relay(listener, workerId, true);
  }

  private Relay.Builder relay(RelayEventListener listener, String workerId, boolean notify) {
    return relay(listener, workerId, notify, false, claim -> Outcome.done());
  }

  /**
   * Claimed-but-not-started room of the tuned comparison, in claim batches: the setting that the
   * bench used before Relay's defaults were made the fast configuration.
   */
  static final int TUNED_BUFFER_BATCHES = 4;

  /**
   * Relay as the bench runs it: at its defaults, except for what a bench needs (schema, worker ID,
   * the handler, a listener, listening connections outside the pool, a shutdown grace, NOTIFY off
   * with a 100 ms poll in the steady runs that measure polling) and {@code --workers} when it is
   * not the default. {@code tuned} adds {@code batchSize(--batch)} and {@code bufferSize(4 ×
   * batch)}, the configuration the defaults are compared with. {@link #settingsChanged} lists all
   * of it.
   */
  private Relay.Builder relay(
      RelayEventListener listener,
      String workerId,
      boolean notify,
      boolean tuned,
      Handler handler) {
    Relay.Builder b =
        Relay.builder(db.pool())
            .schema(SCHEMA)
            .workerId(workerId)
            .handle(KIND, handler)
            .notifications(notify)
            .listenConnections(db::connect)
            .shutdownGrace(Duration.ofSeconds(10))
            .listener(listener);
    if (!notify) {
      b.pollInterval(Duration.ofMillis(100));
    }
    if (sizes.workers() != Relay.DEFAULT_CONCURRENCY) {
      b.concurrency(sizes.workers());
    }
    if (tuned) {
      b.batchSize(sizes.batch()).bufferSize(tunedBufferSize());
    }
    return b;
  }

  private int tunedBufferSize() {
    return TUNED_BUFFER_BATCHES * Math.max(sizes.batch(), sizes.workers());
  }

  /** Every setting the bench changes from Relay's defaults, for the run's log. */
  List<String> settingsChanged() {
    List<String> s = new ArrayList<>();
    s.add("schema(" + SCHEMA + ")");
    s.add("workerId(bench-N)");
    s.add("handle(" + KIND + ", no-op)");
    s.add("listener(counting)");
    s.add("listenConnections(outside the pool)");
    s.add("shutdownGrace(10 s)");
    if (sizes.workers() != Relay.DEFAULT_CONCURRENCY) {
      s.add("concurrency(" + sizes.workers() + ")");
    }
    s.add("steady runs with notify=false: notifications(false), pollInterval(100 ms)");
    s.add(
        "burn-down-tuned only: batchSize("
            + sizes.batch()
            + "), bufferSize("
            + tunedBufferSize()
            + ")");
    return s;
  }

  /** One burn-down of {@code jobs} pre-enqueued rows by {@code instances} Relay instances. */
  record BurnDown(double jobsPerSecond, double xactPerJob, double heapMiB, double peakLiveMiB) {}

  BurnDown burnDownRun(int instances, int jobs, Runnable beforeStart) throws Exception {
    return burnDownRun(instances, jobs, false, beforeStart);
  }

  BurnDown burnDownRun(int instances, int jobs, boolean tuned, Runnable beforeStart)
      throws Exception {
    return burnDownRun(instances, jobs, tuned, claim -> Outcome.done(), beforeStart);
  }

  /** As above, with {@code handler} instead of the no-op (the transport scenarios). */
  BurnDown burnDownRun(
      int instances, int jobs, boolean tuned, Handler handler, Runnable beforeStart)
      throws Exception {
    return burnDownRun(instances, jobs, tuned, handler, b -> b, beforeStart);
  }

  /** As above, with more settings ({@code settings}: the slow-receiver scenario). */
  BurnDown burnDownRun(
      int instances,
      int jobs,
      boolean tuned,
      Handler handler,
      UnaryOperator<Relay.Builder> settings,
      Runnable beforeStart)
      throws Exception {
    preload(jobs);
    CountDownLatch done = new CountDownLatch(jobs);
    AtomicLong firstClaim = new AtomicLong();
    RelayEventListener listener =
        new RelayEventListener() {
          @Override
          public void claimed(Claim claim) {
            firstClaim.compareAndSet(0, System.nanoTime());
          }

          @Override
          public void completed(Claim claim) {
            done.countDown();
          }
        };
    List<Relay> relays = new ArrayList<>();
    for (int i = 0; i < instances; i++) {
      relays.add(settings.apply(relay(listener, "bench-" + i, true, tuned, handler)).build());
    }
    beforeStart.run();
    long x0 = db.xactCommit();
    long end;
    double heap;
    HeapWatch watch = new HeapWatch();
    try {
      for (Relay r : relays) {
        r.start();
      }
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("burn-down did not finish: " + done.getCount() + " left");
      }
      end = System.nanoTime();
      heap = heapAfterGc();
    } finally {
      watch.close();
      for (Relay r : relays) {
        r.close();
      }
    }
    BenchDb.awaitStatsFlush();
    long x1 = db.xactCommit();
    double secs = (end - firstClaim.get()) / 1e9;
    return new BurnDown(jobs / secs, (double) (x1 - x0) / jobs, heap, watch.peakMiB());
  }

  static double heapAfterGc() {
    System.gc();
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / (1024.0 * 1024);
  }

  /**
   * Burn-down by 1 and 2 instances at Relay's defaults, with transactions per job and heap after
   * each run; and, in the same rounds (run for run, so both see the same load), one instance tuned
   * as before ({@code burn-down-tuned}), to compare the defaults with, and one instance serving two
   * queues ({@code burn-down-two-queues}: the backlog is in the first), whose claims go through the
   * several-queue statement.
   */
  void burnDown() throws Exception {
    for (int instances : new int[] {1, 2}) {
      Map<String, Object> p = burnDownParams(instances, "defaults");
      Scenario rate = report.add(new Scenario("burn-down", "relay", p, "jobs/s"));
      Scenario xact = report.add(new Scenario("burn-down-xact-per-job", "relay", p, "xact/job"));
      Scenario tuned = null;
      Scenario twoQueues = null;
      if (instances == 1) {
        String tunedConfig =
            "batchSize(" + sizes.batch() + ").bufferSize(" + tunedBufferSize() + ")";
        tuned =
            report.add(
                new Scenario(
                    "burn-down-tuned", "relay", burnDownParams(instances, tunedConfig), "jobs/s"));
        String queues = "queues(" + QUEUE + ", " + OTHER_QUEUE + ")";
        twoQueues =
            report.add(
                new Scenario(
                    "burn-down-two-queues", "relay", burnDownParams(instances, queues), "jobs/s"));
      }
      for (int run = 0; run < sizes.runs(); run++) {
        truncate();
        vacuum();
        BurnDown r = burnDownRun(instances, sizes.jobs(), () -> {});
        rate.add(r.jobsPerSecond());
        xact.add(r.xactPerJob());
        if (tuned != null) {
          truncate();
          vacuum();
          tuned.add(burnDownRun(instances, sizes.jobs(), true, () -> {}).jobsPerSecond());
        }
        if (twoQueues != null) {
          truncate();
          vacuum();
          twoQueues.add(
              burnDownRun(
                      instances,
                      sizes.jobs(),
                      false,
                      claim -> Outcome.done(),
                      b -> b.queues(QUEUE, OTHER_QUEUE),
                      () -> {})
                  .jobsPerSecond());
        }
      }
    }
  }

  private Map<String, Object> burnDownParams(int instances, String config) {
    return params(
        "jobs", sizes.jobs(), "instances", instances, "workers", sizes.workers(), "config", config);
  }

  /**
   * Rows of each discarded warm-up burn-down but the first (fewer when {@code --jobs} is smaller).
   */
  static final int WARM_UP_JOBS = 20_000;

  /** Seconds of the discarded warm-up steady run. */
  static final int WARM_UP_STEADY_SECONDS = 3;

  /**
   * A discarded round before anything is measured: burn-downs by 1 and 2 instances at the defaults
   * and one tuned, and a short steady run at the pickup target's rate, so the JIT, the pool, the
   * server's caches and its statistics are warm when the first measured run starts. Without it the
   * first run of a series was the slowest (up to 1.4× below the later ones), which lowered the
   * burn-down medians and made the growth ratios, divided by the empty-table median, read above 1.
   * The one-instance burn-down drains a full {@code --jobs} backlog: on a new server the first run
   * of that size otherwise writes WAL into new segment files, which the server fills with zeros
   * first (about nine 16 MB files at default sizes), while later runs reuse the segments a
   * checkpoint recycled.
   */
  void warmUp(boolean steady) throws Exception {
    int jobs = Math.min(sizes.jobs(), WARM_UP_JOBS);
    for (int instances : new int[] {1, 2}) {
      truncate();
      vacuum();
      burnDownRun(instances, instances == 1 ? sizes.jobs() : jobs, () -> {});
    }
    truncate();
    vacuum();
    burnDownRun(1, jobs, true, () -> {});
    if (steady) {
      truncate();
      steadyRun(
          BenchCommand.PICKUP_TARGET_RATE,
          true,
          Math.min(sizes.steadySeconds(), WARM_UP_STEADY_SECONDS));
    }
    truncate();
    vacuum();
  }

  /**
   * Memory: one instance drains a large backlog ({@code --memory-backlog}, 1M by default); the
   * bench JVM's heap after GC at the end, and the peak heap in use after any collection during the
   * run (the live set's high-water mark, from GC notifications). Both include the bench's own
   * objects: an upper bound for Relay.
   */
  void memoryBacklog() throws Exception {
    Map<String, Object> p = params("backlog", sizes.memoryBacklog(), "instances", 1);
    Scenario after = report.add(new Scenario("memory-heap-after-burn-down", "relay", p, "MiB"));
    Scenario peak = report.add(new Scenario("memory-heap-peak-live", "relay", p, "MiB"));
    Scenario rate = report.add(new Scenario("burn-down", "relay", p, "jobs/s"));
    for (int run = 0; run < sizes.memoryRuns(); run++) {
      truncate();
      vacuum();
      BurnDown r = burnDownRun(1, sizes.memoryBacklog(), () -> {});
      after.add(r.heapMiB());
      peak.add(r.peakLiveMiB());
      rate.add(r.jobsPerSecond());
    }
    truncate();
    vacuum();
  }

  /**
   * One burn-down (one instance, on emptied tables) while another session holds a REPEATABLE READ
   * snapshot from before the backlog's first claim to its end.
   */
  private double heldHorizonRun(UnaryOperator<Relay.Builder> settings) throws Exception {
    truncate();
    vacuum();
    try (Connection holder = db.connect()) {
      holder.setAutoCommit(false);
      holder.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      double rate =
          burnDownRun(
                  1,
                  sizes.jobs(),
                  false,
                  claim -> Outcome.done(),
                  settings,
                  () -> {
                    try (var s = holder.createStatement()) {
                      s.execute("SELECT txid_current(), count(*) FROM " + SCHEMA + ".outbox");
                    } catch (SQLException e) {
                      throw new IllegalStateException(e);
                    }
                  })
              .jobsPerSecond();
      holder.rollback();
      return rate;
    }
  }

  /**
   * Burn-down with a transaction holding back the xmin horizon (by a worker of one queue, then by
   * one of two queues, whose claims take the several-queue statement), then with retained done
   * rows, each as a ratio to empty-table burn-downs run in this part. Each round's held-horizon
   * runs follow an empty-table run of their own, and their ratios are the medians of the pairs'
   * ratios: the machine's run-to-run spread (a quarter either way on two shared cores) then falls
   * on both sides of each ratio alike. The retained runs come next, divided by the median of those
   * same empty runs. The retained rows are what a worker of this release leaves for completed work:
   * a row in the history table, in today's partition (created first if the schema's maintenance has
   * not made it yet), and its tombstone.
   */
  void growth() throws Exception {
    Scenario xmin =
        report.add(
            new Scenario(
                "growth-xmin-held",
                "relay",
                params("jobs", sizes.jobs(), "open_transaction", "REPEATABLE READ, whole run"),
                "jobs/s"));
    Scenario empty =
        report.add(
            new Scenario(
                "growth-empty",
                "relay",
                params("jobs", sizes.jobs(), "tables", "empty, right before each held run"),
                "jobs/s"));
    Scenario ratio =
        report.add(
            new Scenario(
                "growth-xmin-held-ratio",
                "relay",
                params("of", "each held run to the empty run before it; median of the pairs"),
                "x empty"));
    String twoQueues = "queues(" + QUEUE + ", " + OTHER_QUEUE + ")";
    Scenario xminTwo =
        report.add(
            new Scenario(
                "growth-xmin-held-two-queues",
                "relay",
                params(
                    "jobs",
                    sizes.jobs(),
                    "open_transaction",
                    "REPEATABLE READ, whole run",
                    "config",
                    twoQueues),
                "jobs/s"));
    Scenario ratioTwo =
        report.add(
            new Scenario(
                "growth-xmin-held-two-queues-ratio",
                "relay",
                params("of", "each such run to the empty run of its round; median of the pairs"),
                "x empty"));
    for (int run = 0; run < sizes.runs(); run++) {
      truncate();
      vacuum();
      empty.add(burnDownRun(1, sizes.jobs(), () -> {}).jobsPerSecond());
      xmin.add(heldHorizonRun(b -> b));
      ratio.add(xmin.runs().get(run) / empty.runs().get(run));
      xminTwo.add(heldHorizonRun(b -> b.queues(QUEUE, OTHER_QUEUE)));
      ratioTwo.add(xminTwo.runs().get(run) / empty.runs().get(run));
    }
    truncate();
    db.exec("SELECT " + SCHEMA + ".add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date)");
    try (Connection c = db.pool().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO "
                    + SCHEMA
                    + ".work_history (work_id, kind, payload, state, claim_generation, attempts,"
                    + " claimed_at, first_attempt_at, completed_at, outcome, milestone)"
                    + " SELECT "
                    + ids.sql("r-", "g")
                    + ", ?, jsonb_build_object('n', g), 'done', 1, 1,"
                    + " clock_timestamp(), clock_timestamp(), clock_timestamp(), 'delivered',"
                    + " 'accepted' FROM generate_series(1, ?) AS g")) {
      ps.setString(1, KIND);
      ps.setInt(2, sizes.retained());
      ps.executeUpdate();
    }
    db.exec(TOMBSTONES_OF_HISTORY);
    vacuum();
    // A partitioned table has no storage of its own: its partitions (with their indexes) hold it.
    long bytes =
        db.queryLong(
            "SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('"
                + SCHEMA
                + ".work_history')");
    report
        .add(
            new Scenario(
                "memory-bytes-per-retained-row",
                "relay",
                params("rows", sizes.retained(), "includes", "heap+indexes+toast"),
                "bytes/row"))
        .add((double) bytes / sizes.retained());
    Scenario retained =
        report.add(
            new Scenario(
                "growth-retained",
                "relay",
                params(
                    "jobs",
                    sizes.jobs(),
                    "retained_done_rows",
                    sizes.retained(),
                    "ids",
                    ids.name()),
                "jobs/s"));
    for (int run = 0; run < sizes.runs(); run++) {
      // the previous run's backlog, found again from the series that named it
      String backlog =
          " WHERE work_id IN (SELECT "
              + ids.sql("b-", "g")
              + " FROM generate_series(1, "
              + sizes.jobs()
              + ") AS g)";
      db.exec(
          "DELETE FROM " + SCHEMA + ".outbox" + backlog,
          "DELETE FROM " + SCHEMA + ".work_history" + backlog,
          "DELETE FROM " + SCHEMA + ".tombstone" + backlog,
          "TRUNCATE " + SCHEMA + ".attempt");
      vacuum();
      retained.add(burnDownRun(1, sizes.jobs(), () -> {}).jobsPerSecond());
    }
    report
        .add(
            new Scenario(
                "growth-retained-ratio",
                "relay",
                params("retained_done_rows", sizes.retained(), "of", "median of growth-empty"),
                "x empty"))
        .add(retained.median() / empty.median());
    truncate();
    vacuum();
  }

  /** Steady load at each rate, with NOTIFY on and off: pickup and completion latency. */
  void steady() throws Exception {
    for (boolean notify : new boolean[] {true, false}) {
      for (int rate : sizes.rates()) {
        Map<String, Object> p =
            params(
                "rate",
                rate,
                "seconds",
                sizes.steadySeconds(),
                "notify",
                notify,
                "poll_ms",
                notify ? 2000 : 100);
        List<Scenario> s = Latencies.scenarios(report, "relay", p);
        List<Scenario> split = Latencies.claimScenarios(report, "relay", p);
        for (int run = 0; run < sizes.runs(); run++) {
          truncate();
          Latencies lat = steadyRun(rate, notify, sizes.steadySeconds());
          Latencies.record(s, lat);
          Latencies.recordClaims(split, lat);
        }
      }
    }
  }

  private Latencies steadyRun(int rate, boolean notify, int seconds) throws Exception {
    int total = rate * seconds;
    Latencies lat = new Latencies(total);
    CountDownLatch done = new CountDownLatch(total);
    RelayEventListener listener =
        new RelayEventListener() {
          @Override
          public void claimed(Claim claim) {
            lat.claimed(index(claim.workId()));
          }

          @Override
          public void completed(Claim claim) {
            lat.completed(index(claim.workId()));
            done.countDown();
          }
        };
    Relay r =
        relay(
                listener,
                "bench-steady",
                notify,
                false,
                claim -> {
                  lat.started(index(claim.workId()));
                  return Outcome.done();
                })
            .build();
    Outbox outbox = Outbox.builder().schema(SCHEMA).notifications(notify).build();
    try {
      r.start();
      Thread.sleep(300);
      Pacer.run(
          rate,
          total,
          (i) -> {
            try (Connection c = db.pool().getConnection()) {
              c.setAutoCommit(false);
              outbox.enqueue(c, Work.of("s-" + i, KIND, "{\"n\":" + i + "}"));
              c.commit();
              lat.committed(i);
            }
          });
      if (!done.await(seconds + 120L, TimeUnit.SECONDS)) {
        throw new IllegalStateException("steady load did not drain: " + done.getCount() + " left");
      }
    } finally {
      r.close();
    }
    return lat;
  }

  /**
   * Local hand-off at {@code rate} jobs/s: each item is enqueued through an outbox handing off to
   * the worker of this process and committed with {@link Outbox#commitAndStart}. Pickup is from the
   * COMMIT's return (recorded by the connection, before the start) to the handler's start; NOTIFY
   * stays on for what is not handed off, the poll at the default.
   */
  void steadyHandoff(int rate) throws Exception {
    Map<String, Object> p =
        params("rate", rate, "seconds", sizes.steadySeconds(), "notify", true, "handoff", true);
    List<Scenario> s = Latencies.scenarios(report, "relay-handoff", p);
    for (int run = 0; run < sizes.runs(); run++) {
      truncate();
      Latencies.record(s, steadyHandoffRun(rate));
    }
  }

  private Latencies steadyHandoffRun(int rate) throws Exception {
    int total = rate * sizes.steadySeconds();
    Latencies lat = new Latencies(total);
    CountDownLatch done = new CountDownLatch(total);
    RelayEventListener listener =
        new RelayEventListener() {
          @Override
          public void completed(Claim claim) {
            lat.completed(index(claim.workId()));
            done.countDown();
          }
        };
    Relay r =
        relay(
                listener,
                "bench-handoff",
                true,
                false,
                claim -> {
                  lat.started(index(claim.workId()));
                  return Outcome.done();
                })
            .localHandoff(true)
            .build();
    try {
      r.start();
      Outbox outbox = Outbox.builder().schema(SCHEMA).build().handingOffTo(r);
      Thread.sleep(300);
      Pacer.run(
          rate,
          total,
          (i) -> {
            try (Connection c = committing(db.pool().getConnection(), () -> lat.committed(i))) {
              c.setAutoCommit(false);
              outbox.enqueue(c, Work.of("h-" + i, KIND, "{\"n\":" + i + "}"));
              outbox.commitAndStart(c);
            }
          });
      if (!done.await(sizes.steadySeconds() + 120L, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            "hand-off load did not drain: " + done.getCount() + " left");
      }
    } finally {
      r.close();
    }
    return lat;
  }

  /** {@code c}, running {@code afterCommit} as soon as its {@code commit()} returned normally. */
  private static Connection committing(Connection c, Runnable afterCommit) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              try {
                Object result = method.invoke(c, args);
                if (method.getName().equals("commit")) {
                  afterCommit.run();
                }
                return result;
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  static int index(String workId) {
    return Integer.parseInt(workId.substring(workId.indexOf('-') + 1));
  }

  static double seconds(long t0) {
    return (System.nanoTime() - t0) / 1e9;
  }

  static Map<String, Object> params(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  static void parkUntil(long deadline) {
    long wait;
    while ((wait = deadline - System.nanoTime()) > 0) {
      LockSupport.parkNanos(wait);
    }
  }
}
