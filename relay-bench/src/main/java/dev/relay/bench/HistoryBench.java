package dev.relay.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Claim;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.admin.Admin;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code --only history}: what retention costs a busy queue. The work table is filled straight from
 * SQL ({@code generate_series}) with {@code --history-rows} done rows, {@code --history-purge} of
 * them finished 30 days ago (past every retention) and the rest an hour ago. One Relay instance
 * then burns down a backlog that a feeder keeps topped up, all through the part, and the burn-down
 * rate is compared in windows of {@code --seconds}:
 *
 * <ul>
 *   <li><b>Purge</b>, in groups A B B A (without, with, with, without), until nothing is left:
 *       Relay's own retention ({@link Admin#purge} under {@link PurgePolicy#DEFAULT}, the
 *       maintenance service's policy, in rounds of at most 10 batches so a window ends on time)
 *       runs back to back in the B windows. Reported: the median over the groups of the burn-down
 *       rate with/without (drift over seconds cancels within a group), the purge's time and rows/s,
 *       and its WAL (the purge's own backend's counters, PostgreSQL 18).
 *   <li><b>Vacuum</b>, as A V A: a plain {@code VACUUM} of the work table pays the dead rows back:
 *       time, WAL, and the burn-down rate meanwhile.
 * </ul>
 *
 * <p>Heap size, index size and dead rows are read after the load, after the purge and after the
 * vacuum. The purge's cost is put in burn-down terms: jobs the burn-down lost while the purge and
 * its vacuum ran (against the adjacent A windows), per row purged. Every finished job is purged
 * once, so at steady state that share is the fraction of the burn-down retention takes. Autovacuum
 * stays as the server has it.
 */
final class HistoryBench {
  /** Default done rows loaded. */
  static final int DEFAULT_ROWS = 10_000_000;

  /** Default rows of them past retention. */
  static final int DEFAULT_PURGE = 5_000_000;

  /** Rows per generated load statement (each its own transaction). */
  private static final int LOAD_CHUNK = 1_000_000;

  /** Backlog rows the feeder adds at a time, and the low mark it refills at. */
  private static final int FEED_CHUNK = 10_000;

  private final BenchDb db;
  private final RelayBench relay;
  private final Report report;
  private final int rows;
  private final int purge;
  private final long window;

  HistoryBench(BenchDb db, RelayBench relay, Report report, int rows, int purge, int seconds) {
    this.db = db;
    this.relay = relay;
    this.report = report;
    this.rows = rows;
    this.purge = purge;
    this.window = seconds * 1_000L;
  }

  private static final String T = RelayBench.SCHEMA + ".outbox";

  /** Sizes and dead rows of the work table (and the tombstones' size) at one moment. */
  record Footprint(long heap, long indexes, long tombstones, long live, long dead) {
    double heapPerRow() {
      return (double) heap / Math.max(1, live);
    }

    double indexesPerRow() {
      return (double) indexes / Math.max(1, live);
    }

    String text() {
      return String.format(
          Locale.ROOT,
          "heap %s, indexes %s, tombstones %s, live %,d, dead %,d",
          mib(heap),
          mib(indexes),
          mib(tombstones),
          live,
          dead);
    }
  }

  void run() throws Exception {
    Map<String, Object> p = RelayBench.params("rows", rows, "purged", purge);
    load();
    Footprint loaded = footprint();
    report.log("   loaded: " + loaded.text());

    AtomicLong completed = new AtomicLong();
    RelayEventListener listener =
        new RelayEventListener() {
          @Override
          public void completed(Claim claim) {
            completed.incrementAndGet();
          }
        };
    Feeder feeder = new Feeder(completed);
    Relay r = relay.builder(listener, "bench-history").build();
    Thread feed = new Thread(feeder, "history-feeder");
    feed.setDaemon(true);
    feeder.topUp(); // a backlog before the first claim
    feed.start();
    // The purge and the vacuum run on one connection of their own, so that backend's WAL counters
    // (PostgreSQL 18) are theirs alone, whatever the burn-down writes meanwhile.
    HikariConfig one = new HikariConfig();
    one.setJdbcUrl(db.url());
    one.setPoolName("relay-bench-history");
    one.setMaximumPoolSize(1);
    one.setMinimumIdle(1);
    List<Double> ratios = new ArrayList<>();
    double purgeSeconds = 0;
    double lost = 0;
    double quietJobs = 0;
    double quietSeconds = 0;
    long purgedRows = 0;
    Wal w0;
    Wal w1;
    Wal w2;
    double vacuumSeconds;
    double vacuumRatio;
    Footprint purged;
    Footprint vacuumed;
    try (HikariDataSource purger = new HikariDataSource(one)) {
      Admin admin = Admin.create(purger, RelayBench.SCHEMA);
      r.start();
      Thread.sleep(Math.min(5_000L, window)); // warm-up, not measured
      w0 = wal(purger);
      boolean done = false;
      // A B B A: without, with, with, without the purge; drift over seconds cancels in a group.
      while (!done) {
        Window a1 = idle(completed);
        Window b1 = purging(completed, admin);
        done = b1.complete;
        Window b2 = done ? Window.NONE : purging(completed, admin);
        done = done || b2.complete;
        Window a2 = idle(completed);
        double rateA = (a1.jobs + a2.jobs) / (a1.seconds + a2.seconds);
        quietJobs += a1.jobs + a2.jobs;
        quietSeconds += a1.seconds + a2.seconds;
        double secondsB = b1.seconds + b2.seconds;
        double rateB = (b1.jobs + b2.jobs) / secondsB;
        ratios.add(rateB / rateA);
        // Not clipped at 0: a group whose B windows ran faster is noise, and cancels others.
        lost += rateA * secondsB - (b1.jobs + b2.jobs);
        purgeSeconds += secondsB;
        purgedRows += b1.purged + b2.purged;
      }
      w1 = wal(purger);
      purged = footprint();
      // A V A: the vacuum that pays the purge's dead rows back, between two quiet windows.
      Window a1 = idle(completed);
      long t0 = System.nanoTime();
      long j0 = completed.get();
      try (Connection c = purger.getConnection();
          Statement s = c.createStatement()) {
        s.execute("VACUUM " + T);
      }
      vacuumSeconds = RelayBench.seconds(t0);
      long vacuumJobs = completed.get() - j0;
      Window a2 = idle(completed);
      double rateA = (a1.jobs + a2.jobs) / (a1.seconds + a2.seconds);
      vacuumRatio = vacuumJobs / vacuumSeconds / rateA;
      lost += rateA * vacuumSeconds - vacuumJobs;
      w2 = wal(purger);
      vacuumed = footprint();
    } finally {
      feeder.stop();
      feed.join();
      r.close();
    }
    feeder.rethrow();

    double ratio = median(ratios);
    double share = purgedRows == 0 ? 0 : Math.max(0, lost) / purgedRows;
    long purgeWal = w1.bytes - w0.bytes;
    long vacuumWal = w2.bytes - w1.bytes;
    report.log(
        String.format(
            Locale.ROOT,
            "   purge: %,d rows in %.1f s (%,.0f rows/s), its WAL %s (%.0f bytes/row, %,d"
                + " full-page images)",
            purgedRows,
            purgeSeconds,
            purgedRows / purgeSeconds,
            mib(purgeWal),
            (double) purgeWal / Math.max(1, purgedRows),
            w1.fpi - w0.fpi));
    report.log("   after purge: " + purged.text());
    report.log(
        String.format(Locale.ROOT, "   vacuum: %.1f s, its WAL %s", vacuumSeconds, mib(vacuumWal)));
    report.log("   after vacuum: " + vacuumed.text());
    report.log(
        String.format(
            Locale.ROOT,
            "   burn-down without the purge %,.0f jobs/s; while it runs: %.3f x without (median"
                + " of %d ABBA groups: %s); during the vacuum %.3f x; lost %,.0f jobs = %.1f%% of"
                + " the rows purged",
            quietJobs / quietSeconds,
            ratio,
            ratios.size(),
            ratios.stream().map(Report::fmt).toList(),
            vacuumRatio,
            lost,
            share * 100));

    add("history-burn-down-during-purge-ratio", p, "x without", ratio);
    add("history-burn-down-during-vacuum-ratio", p, "x without", vacuumRatio);
    add("history-purge-seconds", p, "s", purgeSeconds);
    add("history-purge-rate", p, "rows/s", purgedRows / purgeSeconds);
    add("history-purge-wal-per-row", p, "bytes", (double) purgeWal / Math.max(1, purgedRows));
    add("history-vacuum-seconds", p, "s", vacuumSeconds);
    add("history-vacuum-wal", p, "MiB", vacuumWal / (1024.0 * 1024));
    add("history-dead-rows-after-purge", p, "rows", purged.dead());
    // Vacuum frees the space for reuse but does not give it back: bytes per live row show it.
    add("history-heap-per-live-row-loaded", p, "bytes", loaded.heapPerRow());
    add("history-heap-per-live-row-after-vacuum", p, "bytes", vacuumed.heapPerRow());
    add("history-indexes-per-live-row-loaded", p, "bytes", loaded.indexesPerRow());
    add("history-indexes-per-live-row-after-vacuum", p, "bytes", vacuumed.indexesPerRow());
    add("history-purge-cost-share", p, "lost jobs/row purged", share);
    db.exec("TRUNCATE " + T + ", " + RelayBench.SCHEMA + ".tombstone CASCADE");
  }

  /** One window of the burn-down: its length, completions, and what the purge did in it. */
  private record Window(double seconds, long jobs, long purged, boolean complete) {
    static final Window NONE = new Window(0, 0, 0, true);
  }

  /** A window with nothing but the burn-down. */
  private Window idle(AtomicLong completed) throws InterruptedException {
    long t0 = System.nanoTime();
    long j0 = completed.get();
    Thread.sleep(window);
    return new Window(RelayBench.seconds(t0), completed.get() - j0, 0, false);
  }

  /**
   * A window of purge rounds back to back (each at most {@link #ROUND} batches, so the window ends
   * close to its length), until the window is over or nothing is left to purge.
   */
  private Window purging(AtomicLong completed, Admin admin) {
    long t0 = System.nanoTime();
    long j0 = completed.get();
    long rowsPurged = 0;
    boolean complete = false;
    while (!complete && System.nanoTime() - t0 < window * 1_000_000L) {
      PurgeResult pr = admin.purge(ROUND, false);
      rowsPurged += pr.work();
      complete = pr.complete();
    }
    return new Window(RelayBench.seconds(t0), completed.get() - j0, rowsPurged, complete);
  }

  /** The maintenance service's policy, in rounds of at most 10 batches (10,000 rows). */
  static final PurgePolicy ROUND =
      PurgePolicy.DEFAULT.withBatches(PurgePolicy.DEFAULT_BATCH_SIZE, 10);

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    sorted.sort(null);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** WAL written by one backend so far: bytes, and full-page images (a count). */
  private record Wal(long bytes, long fpi) {}

  /**
   * The WAL counters of the purger's one backend (PostgreSQL 18's {@code pg_stat_get_backend_wal}),
   * flushed first: a forced flush happens as the backend goes idle after the first statement.
   */
  private static Wal wal(HikariDataSource purger) throws SQLException {
    try (Connection c = purger.getConnection();
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_force_next_flush()");
      try (ResultSet rs =
          s.executeQuery(
              "SELECT wal_bytes::bigint, wal_fpi FROM pg_stat_get_backend_wal(pg_backend_pid())")) {
        rs.next();
        return new Wal(rs.getLong(1), rs.getLong(2));
      }
    }
  }

  private void add(String name, Map<String, Object> p, String unit, double value) {
    report.add(new Scenario(name, "relay", p, unit)).add(value);
  }

  /**
   * {@link #purge} done rows finished 30 days ago, in completion order, then the rest an hour ago;
   * each chunk of a million its own statement. Vacuumed and analysed, then a checkpoint, so the
   * purge starts from a table autovacuum has already seen, as an old table would be.
   */
  private void load() throws SQLException {
    db.exec("TRUNCATE " + T + ", " + RelayBench.SCHEMA + ".tombstone CASCADE");
    long t0 = System.nanoTime();
    String insert =
        "INSERT INTO "
            + T
            + " (work_id, kind, payload, state, claim_generation, attempts, created_at,"
            + " available_at, claimed_at, first_attempt_at, completed_at, outcome, milestone)"
            + " SELECT ? || g, ?, jsonb_build_object('n', g, 'order', 'o-' || g), 'done', 1, 1,"
            + " t, t, t, t, t, 'delivered', 'accepted'"
            + " FROM generate_series(?, ?) AS g,"
            + " LATERAL (SELECT clock_timestamp() - ? * interval '1 hour' + g * interval '1 ms'"
            + " AS t) AS at";
    try (Connection c = db.pool().getConnection();
        PreparedStatement ps = c.prepareStatement(insert)) {
      loadChunks(ps, "old-", purge, 30 * 24);
      loadChunks(ps, "kept-", rows - purge, 1 + (rows - purge) / 3_600_000);
    }
    BenchDb.awaitStatsFlush(); // the inserts' counts, before VACUUM sets the live rows
    db.exec("VACUUM ANALYZE " + T, "CHECKPOINT");
    report.log(
        String.format(
            Locale.ROOT,
            "   loaded %,d done rows (%,d past retention) in %.0f s",
            rows,
            purge,
            RelayBench.seconds(t0)));
  }

  private static void loadChunks(PreparedStatement ps, String prefix, int count, int hoursAgo)
      throws SQLException {
    for (int from = 1; from <= count; from += LOAD_CHUNK) {
      ps.setString(1, prefix);
      ps.setString(2, RelayBench.KIND);
      ps.setInt(3, from);
      ps.setInt(4, Math.min(count, from + LOAD_CHUNK - 1));
      ps.setInt(5, hoursAgo);
      ps.executeUpdate();
    }
  }

  private Footprint footprint() throws SQLException {
    try (Connection c = db.pool().getConnection();
        var s = c.createStatement()) {
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (var rs =
          s.executeQuery(
              "SELECT pg_relation_size(relid), pg_indexes_size(relid),"
                  + " pg_total_relation_size('"
                  + RelayBench.SCHEMA
                  + ".tombstone'), n_live_tup, n_dead_tup FROM pg_stat_user_tables"
                  + " WHERE relid = '"
                  + T
                  + "'::regclass")) {
        rs.next();
        return new Footprint(
            rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
      }
    }
  }

  /**
   * Keeps a backlog of ready work: adds {@link #FEED_CHUNK} rows whenever fewer than that are left
   * unfinished (by the listener's count, so it asks the database nothing).
   */
  private final class Feeder implements Runnable {
    private final AtomicLong completed;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<Exception> failed = new AtomicReference<>();
    private long inserted;

    Feeder(AtomicLong completed) {
      this.completed = completed;
    }

    void topUp() throws SQLException {
      while (inserted - completed.get() < 2L * FEED_CHUNK) {
        try (Connection c = db.pool().getConnection();
            PreparedStatement ps =
                c.prepareStatement(
                    "INSERT INTO "
                        + T
                        + " (work_id, kind, payload) SELECT 'hb-' || g, ?,"
                        + " jsonb_build_object('n', g) FROM generate_series(?, ?) AS g")) {
          ps.setString(1, RelayBench.KIND);
          ps.setLong(2, inserted + 1);
          ps.setLong(3, inserted + FEED_CHUNK);
          ps.executeUpdate();
        }
        inserted += FEED_CHUNK;
      }
    }

    @Override
    public void run() {
      try {
        while (!stop.get()) {
          topUp();
          Thread.sleep(20);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (SQLException | RuntimeException e) {
        failed.set(e);
      }
    }

    void stop() {
      stop.set(true);
    }

    void rethrow() throws Exception {
      if (failed.get() != null) {
        throw failed.get();
      }
    }
  }

  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%,.0f MiB", bytes / (1024.0 * 1024));
  }
}
