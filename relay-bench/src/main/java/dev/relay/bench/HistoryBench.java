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
 * {@code --only history}: what retention costs a busy queue, in the two layouts finished work has.
 * One Relay instance burns down a backlog that a feeder keeps topped up, all through each part, and
 * the burn-down rate is compared in windows of {@code --seconds}, in groups A B B A (without, with,
 * with, without; drift over seconds cancels within a group) until nothing is left to remove. The
 * removal runs on one connection of its own, so that backend's WAL counters (PostgreSQL 18) are its
 * own alone, whatever the burn-down writes meanwhile.
 *
 * <ol>
 *   <li><b>Row by row, in the work table</b> (as retention treats finished rows that workers of
 *       earlier releases, admin actions and cancels leave there): the work table is filled straight
 *       from SQL ({@code generate_series}) with {@code --history-rows} done rows, {@code
 *       --history-purge} of them finished 30 days ago (past every retention) and the rest an hour
 *       ago. Relay's own retention ({@link Admin#purge} under {@link PurgePolicy#DEFAULT}, the
 *       maintenance service's policy, in rounds of at most 10 batches so a window ends on time)
 *       runs back to back in the B windows. Then, as A V A, a plain {@code VACUUM} of the work
 *       table pays the dead rows back: time, WAL, and the burn-down rate meanwhile.
 *   <li><b>A day at a time, in the history table</b> (where workers move what they complete, since
 *       schema version 25): the same number of done rows loaded into the history table, {@code
 *       --history-purge} of them spread over {@value #OLD_DAYS} days 30 days old and more, the rest
 *       over the {@value #KEPT_DAYS} days before today (inside the retention). The same retention
 *       retires the old days, one day per round ({@code retire_history_day}: the day's tombstones,
 *       then its partition detached and dropped). No vacuum follows: nothing dead is left behind.
 * </ol>
 *
 * <p>Each part reports the burn-down rate with/without (median over the groups), the removal's
 * time, rows/s and WAL (bytes per row, full-page images), and sizes (heap, indexes, live and dead
 * rows, tombstones) after the load and after the removal. Its cost is also put in burn-down terms:
 * jobs the burn-down lost while it ran (and for the first part its vacuum), against the adjacent A
 * windows, per row removed. Every finished job is removed once, so at steady state that share is
 * the fraction of the burn-down retention takes. A last line sets the two side by side per row.
 * Autovacuum stays as the server has it.
 */
final class HistoryBench {
  /** Default done rows loaded. */
  static final int DEFAULT_ROWS = 10_000_000;

  /** Default rows of them past retention. */
  static final int DEFAULT_PURGE = 5_000_000;

  /** Days the history table's rows past retention are spread over (30 to 39 days old). */
  static final int OLD_DAYS = 10;

  /** Days its kept rows are spread over (1 to 6 days old: inside the default 7 days). */
  static final int KEPT_DAYS = 6;

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
  private static final String H = RelayBench.SCHEMA + ".work_history";
  private static final String TABLES =
      T + ", " + H + ", " + RelayBench.SCHEMA + ".tombstone CASCADE";

  /** The work table, for {@link #footprint}. */
  private static final String WORK_TABLE = "relid = '" + T + "'::regclass";

  /** The history table's partitions (the default among them), for {@link #footprint}. */
  private static final String HISTORY_PARTITIONS =
      "relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = '" + H + "'::regclass)";

  /** Sizes and dead rows of a table (summed over its partitions) and the tombstones' size. */
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

  /** One removal's cost, for the comparison: rows, seconds, WAL bytes, burn-down jobs lost. */
  private record Cost(long rows, double seconds, long wal, double lost) {
    double micros() {
      return seconds * 1e6 / Math.max(1, rows);
    }

    double walPerRow() {
      return (double) wal / Math.max(1, rows);
    }

    double lostPerRow() {
      return rows == 0 ? 0 : Math.max(0, lost) / rows;
    }
  }

  /** Which of the two removals a run measures ({@code --history-layout}). */
  enum Layout {
    /** Both, row by row first, and the comparison per row removed. */
    both,
    /** The per-row purge of finished rows in the work table, and its vacuum. */
    rows,
    /** Retiring whole days of the history table. */
    days;

    String describe() {
      return switch (this) {
        case both -> "row by row with its vacuum, then a day at a time";
        case rows -> "row by row in the work table, then a vacuum";
        case days -> "a day at a time from the history table";
      };
    }
  }

  void run(Layout layout) throws Exception {
    Map<String, Object> p = RelayBench.params("rows", rows, "purged", purge);
    if (layout == Layout.rows) {
      report.log("   row by row, in the work table:");
      rowByRow(p);
      db.exec("TRUNCATE " + TABLES);
      return;
    }
    if (layout == Layout.days) {
      report.log("   a day at a time, in the history table:");
      byDay(p);
      db.exec("TRUNCATE " + TABLES);
      return;
    }
    report.log("   row by row, in the work table:");
    Cost[] rowByRow = rowByRow(p);
    report.log("   a day at a time, in the history table:");
    Cost byDay = byDay(p);
    report.log(
        String.format(
            Locale.ROOT,
            "   per row removed: row by row %.1f us, WAL %.0f bytes, lost %.4f jobs (with its"
                + " vacuum: %.1f us, WAL %.0f bytes, lost %.4f jobs); a day at a time %.1f us, WAL"
                + " %.0f bytes, lost %.4f jobs",
            rowByRow[0].micros(),
            rowByRow[0].walPerRow(),
            rowByRow[0].lostPerRow(),
            rowByRow[1].micros(),
            rowByRow[1].walPerRow(),
            rowByRow[1].lostPerRow(),
            byDay.micros(),
            byDay.walPerRow(),
            byDay.lostPerRow()));
    db.exec("TRUNCATE " + TABLES);
  }

  /**
   * The first part: the per-row purge of done rows in the work table, then its vacuum. Returns the
   * purge's cost alone, and with the vacuum.
   */
  private Cost[] rowByRow(Map<String, Object> p) throws Exception {
    load();
    Footprint loaded = footprint(WORK_TABLE);
    report.log("   loaded: " + loaded.text());
    Abba g;
    Wal w0;
    Wal w1;
    Wal w2;
    double vacuumSeconds;
    double vacuumRatio;
    double vacuumLost;
    Footprint purged;
    Footprint vacuumed;
    try (BurnDown burn = new BurnDown("bench-history", "hb-");
        HikariDataSource purger = purger()) {
      Admin admin = Admin.create(purger, RelayBench.SCHEMA);
      burn.start();
      w0 = wal(purger);
      g = abba(burn.completed, admin, ROUND);
      w1 = wal(purger);
      purged = footprint(WORK_TABLE);
      // A V A: the vacuum that pays the purge's dead rows back, between two quiet windows.
      Window a1 = idle(burn.completed);
      long t0 = System.nanoTime();
      long j0 = burn.completed.get();
      try (Connection c = purger.getConnection();
          Statement s = c.createStatement()) {
        s.execute("VACUUM " + T);
      }
      vacuumSeconds = RelayBench.seconds(t0);
      long vacuumJobs = burn.completed.get() - j0;
      Window a2 = idle(burn.completed);
      double rateA = (a1.jobs + a2.jobs) / (a1.seconds + a2.seconds);
      vacuumRatio = vacuumJobs / vacuumSeconds / rateA;
      vacuumLost = rateA * vacuumSeconds - vacuumJobs;
      w2 = wal(purger);
      vacuumed = footprint(WORK_TABLE);
    }

    double ratio = median(g.ratios);
    double lost = g.lost + vacuumLost;
    double share = g.rows == 0 ? 0 : Math.max(0, lost) / g.rows;
    long purgeWal = w1.bytes - w0.bytes;
    long vacuumWal = w2.bytes - w1.bytes;
    report.log(
        String.format(
            Locale.ROOT,
            "   purge: %,d rows in %.1f s (%,.0f rows/s), its WAL %s (%.0f bytes/row, %,d"
                + " full-page images)",
            g.rows,
            g.busySeconds,
            g.rows / g.busySeconds,
            mib(purgeWal),
            (double) purgeWal / Math.max(1, g.rows),
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
            g.quietJobs / g.quietSeconds,
            ratio,
            g.ratios.size(),
            g.ratios.stream().map(Report::fmt).toList(),
            vacuumRatio,
            lost,
            share * 100));

    add("history-burn-down-during-purge-ratio", p, "x without", ratio);
    add("history-burn-down-during-vacuum-ratio", p, "x without", vacuumRatio);
    add("history-purge-seconds", p, "s", g.busySeconds);
    add("history-purge-rate", p, "rows/s", g.rows / g.busySeconds);
    add("history-purge-wal-per-row", p, "bytes", (double) purgeWal / Math.max(1, g.rows));
    add("history-vacuum-seconds", p, "s", vacuumSeconds);
    add("history-vacuum-wal", p, "MiB", vacuumWal / (1024.0 * 1024));
    add("history-dead-rows-after-purge", p, "rows", purged.dead());
    // Vacuum frees the space for reuse but does not give it back: bytes per live row show it.
    add("history-heap-per-live-row-loaded", p, "bytes", loaded.heapPerRow());
    add("history-heap-per-live-row-after-vacuum", p, "bytes", vacuumed.heapPerRow());
    add("history-indexes-per-live-row-loaded", p, "bytes", loaded.indexesPerRow());
    add("history-indexes-per-live-row-after-vacuum", p, "bytes", vacuumed.indexesPerRow());
    add("history-purge-cost-share", p, "lost jobs/row purged", share);
    return new Cost[] {
      new Cost(g.rows, g.busySeconds, purgeWal, g.lost),
      new Cost(g.rows, g.busySeconds + vacuumSeconds, purgeWal + vacuumWal, lost)
    };
  }

  /** The second part: whole days of the history table retired. */
  private Cost byDay(Map<String, Object> p) throws Exception {
    int days = loadHistory();
    Footprint loaded = footprint(HISTORY_PARTITIONS);
    report.log("   loaded: " + loaded.text());
    Abba g;
    Wal w0;
    Wal w1;
    Footprint retired;
    try (BurnDown burn = new BurnDown("bench-history-days", "hd-");
        HikariDataSource purger = purger()) {
      Admin admin = Admin.create(purger, RelayBench.SCHEMA);
      burn.start();
      w0 = wal(purger);
      g = abba(burn.completed, admin, DAY_ROUND);
      w1 = wal(purger);
      retired = footprint(HISTORY_PARTITIONS);
    }
    if (g.days != days) {
      throw new IllegalStateException(
          "retention retired " + g.days + " history days of the " + days + " loaded past it");
    }

    double ratio = median(g.ratios);
    double share = g.rows == 0 ? 0 : Math.max(0, g.lost) / g.rows;
    long retireWal = w1.bytes - w0.bytes;
    report.log(
        String.format(
            Locale.ROOT,
            "   retire: %,d rows in %d days in %.1f s (%,.0f rows/s, %.2f s a day), its WAL %s"
                + " (%.0f bytes/row, %,d full-page images)",
            g.rows,
            g.days,
            g.busySeconds,
            g.rows / g.busySeconds,
            g.busySeconds / Math.max(1, g.days),
            mib(retireWal),
            (double) retireWal / Math.max(1, g.rows),
            w1.fpi - w0.fpi));
    report.log("   after retirement (no vacuum needed): " + retired.text());
    report.log(
        String.format(
            Locale.ROOT,
            "   burn-down without the retirement %,.0f jobs/s; while it runs: %.3f x without"
                + " (median of %d ABBA groups: %s); lost %,.0f jobs = %.1f%% of the rows retired",
            g.quietJobs / g.quietSeconds,
            ratio,
            g.ratios.size(),
            g.ratios.stream().map(Report::fmt).toList(),
            g.lost,
            share * 100));

    add("history-burn-down-during-retire-ratio", p, "x without", ratio);
    add("history-retire-seconds", p, "s", g.busySeconds);
    add("history-retire-rate", p, "rows/s", g.rows / g.busySeconds);
    add("history-retire-wal-per-row", p, "bytes", (double) retireWal / Math.max(1, g.rows));
    add("history-retire-dead-rows-after", p, "rows", retired.dead());
    add("history-retire-cost-share", p, "lost jobs/row retired", share);
    return new Cost(g.rows, g.busySeconds, retireWal, g.lost);
  }

  /**
   * The removal and the burn-down side by side: A B B A groups until a B window finds nothing left.
   * The groups' ratios of B to A rate, the jobs lost in B against A's rate, the A windows' jobs and
   * seconds, the B windows' seconds, and what the B windows removed.
   */
  private record Abba(
      List<Double> ratios,
      double lost,
      double quietJobs,
      double quietSeconds,
      double busySeconds,
      long rows,
      long days) {}

  private Abba abba(AtomicLong completed, Admin admin, PurgePolicy policy)
      throws InterruptedException {
    List<Double> ratios = new ArrayList<>();
    double lost = 0;
    double quietJobs = 0;
    double quietSeconds = 0;
    double busySeconds = 0;
    long removed = 0;
    long days = 0;
    boolean done = false;
    while (!done) {
      Window a1 = idle(completed);
      Window b1 = purging(completed, admin, policy);
      done = b1.complete;
      Window b2 = done ? Window.NONE : purging(completed, admin, policy);
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
      busySeconds += secondsB;
      removed += b1.purged + b2.purged;
      days += b1.days + b2.days;
    }
    return new Abba(ratios, lost, quietJobs, quietSeconds, busySeconds, removed, days);
  }

  /** The removal's one connection: its backend's WAL counters are the removal's alone. */
  private HikariDataSource purger() {
    HikariConfig one = new HikariConfig();
    one.setJdbcUrl(db.url());
    one.setPoolName("relay-bench-history");
    one.setMaximumPoolSize(1);
    one.setMinimumIdle(1);
    return new HikariDataSource(one);
  }

  /**
   * A Relay instance burning down a backlog that a feeder keeps topped up (IDs {@code prefix} and a
   * number), and its count of completions; closing stops both.
   */
  private final class BurnDown implements AutoCloseable {
    final AtomicLong completed = new AtomicLong();
    private final Feeder feeder;
    private final Relay relay;
    private final Thread feed;

    BurnDown(String workerId, String prefix) throws SQLException {
      RelayEventListener listener =
          new RelayEventListener() {
            @Override
            public void completed(Claim claim) {
              completed.incrementAndGet();
            }
          };
      feeder = new Feeder(completed, prefix);
      relay = HistoryBench.this.relay.builder(listener, workerId).build();
      feed = new Thread(feeder, "history-feeder");
      feed.setDaemon(true);
      feeder.topUp(); // a backlog before the first claim
      feed.start();
    }

    /** Starts the burn-down and lets it warm up (not measured). */
    void start() throws InterruptedException {
      relay.start();
      Thread.sleep(Math.min(5_000L, window));
    }

    @Override
    public void close() throws SQLException {
      feeder.stop();
      try {
        feed.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      relay.close();
      feeder.rethrow();
    }
  }

  /** One window of the burn-down: its length, completions, and what the removal did in it. */
  private record Window(double seconds, long jobs, long purged, long days, boolean complete) {
    static final Window NONE = new Window(0, 0, 0, 0, true);
  }

  /** A window with nothing but the burn-down. */
  private Window idle(AtomicLong completed) throws InterruptedException {
    long t0 = System.nanoTime();
    long j0 = completed.get();
    Thread.sleep(window);
    return new Window(RelayBench.seconds(t0), completed.get() - j0, 0, 0, false);
  }

  /**
   * A window of purge rounds back to back under {@code policy} (a bounded round, so the window ends
   * close to its length), until the window is over or nothing is left to remove.
   */
  private Window purging(AtomicLong completed, Admin admin, PurgePolicy policy) {
    long t0 = System.nanoTime();
    long j0 = completed.get();
    long rowsPurged = 0;
    long days = 0;
    boolean complete = false;
    while (!complete && System.nanoTime() - t0 < window * 1_000_000L) {
      PurgeResult pr = admin.purge(policy, false);
      rowsPurged += pr.work();
      days += pr.historyDays();
      complete = pr.complete();
    }
    return new Window(RelayBench.seconds(t0), completed.get() - j0, rowsPurged, days, complete);
  }

  /** The maintenance service's policy, in rounds of at most 10 batches (10,000 rows). */
  static final PurgePolicy ROUND =
      PurgePolicy.DEFAULT.withBatches(PurgePolicy.DEFAULT_BATCH_SIZE, 10);

  /** The maintenance service's policy, retiring one history day a round. */
  static final PurgePolicy DAY_ROUND =
      PurgePolicy.DEFAULT.withBatches(PurgePolicy.DEFAULT_BATCH_SIZE, 1);

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
    db.exec("TRUNCATE " + TABLES);
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

  /**
   * The history table's load: {@link #purge} done rows over {@link #OLD_DAYS} days from 30 days ago
   * back, and the rest over the {@link #KEPT_DAYS} days before today, each day in its own partition
   * (created first, as maintenance would have), in completion order within the day; each chunk of a
   * million its own statement. Vacuumed and analysed, then a checkpoint, as {@link #load}. Returns
   * the days past retention.
   */
  private int loadHistory() throws SQLException {
    db.exec("TRUNCATE " + TABLES);
    long t0 = System.nanoTime();
    String insert =
        "INSERT INTO "
            + H
            + " (work_id, kind, payload, state, claim_generation, attempts, created_at,"
            + " available_at, claimed_at, first_attempt_at, completed_at, outcome, milestone)"
            + " SELECT ? || g, ?, jsonb_build_object('n', g, 'order', 'o-' || g), 'done', 1, 1,"
            + " t, t, t, t, t, 'delivered', 'accepted'"
            + " FROM generate_series(?, ?) AS g,"
            + " LATERAL (SELECT (((clock_timestamp() AT TIME ZONE 'UTC')::date - ?)::timestamp"
            + " AT TIME ZONE 'UTC') + interval '1 hour' + (g - ?) * interval '1 ms' AS t) AS at";
    int oldDays = Math.min(OLD_DAYS, purge);
    int keptDays = Math.min(KEPT_DAYS, rows - purge);
    try (Connection c = db.pool().getConnection();
        PreparedStatement add =
            c.prepareStatement(
                "SELECT "
                    + RelayBench.SCHEMA
                    + ".add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date - ?)");
        PreparedStatement ps = c.prepareStatement(insert)) {
      loadDays(add, ps, "old-", purge, 30, oldDays);
      loadDays(add, ps, "kept-", rows - purge, 1, keptDays);
    }
    BenchDb.awaitStatsFlush(); // the inserts' counts, before VACUUM sets the live rows
    db.exec("VACUUM ANALYZE " + H, "CHECKPOINT");
    report.log(
        String.format(
            Locale.ROOT,
            "   loaded %,d done rows (%,d in %d days past retention, the rest in %d days within)"
                + " in %.0f s",
            rows,
            purge,
            oldDays,
            keptDays,
            RelayBench.seconds(t0)));
    return oldDays;
  }

  /**
   * {@code count} rows named {@code prefix} and 1 to {@code count}, spread evenly over {@code days}
   * days from {@code firstDaysAgo} back, each day's partition created first.
   */
  private static void loadDays(
      PreparedStatement add,
      PreparedStatement ps,
      String prefix,
      int count,
      int firstDaysAgo,
      int days)
      throws SQLException {
    for (int d = 0; d < days; d++) {
      int daysAgo = firstDaysAgo + d;
      add.setInt(1, daysAgo);
      add.executeQuery().close();
      int first = (int) ((long) count * d / days) + 1;
      int last = (int) ((long) count * (d + 1) / days);
      for (int from = first; from <= last; from += LOAD_CHUNK) {
        ps.setString(1, prefix);
        ps.setString(2, RelayBench.KIND);
        ps.setInt(3, from);
        ps.setInt(4, Math.min(last, from + LOAD_CHUNK - 1));
        ps.setInt(5, daysAgo);
        ps.setInt(6, first);
        ps.executeUpdate();
      }
    }
  }

  /** The footprint of the tables {@code relids} names (a condition on {@code relid}), summed. */
  private Footprint footprint(String relids) throws SQLException {
    try (Connection c = db.pool().getConnection();
        var s = c.createStatement()) {
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (var rs =
          s.executeQuery(
              "SELECT coalesce(sum(pg_relation_size(relid)), 0),"
                  + " coalesce(sum(pg_indexes_size(relid)), 0),"
                  + " pg_total_relation_size('"
                  + RelayBench.SCHEMA
                  + ".tombstone'), coalesce(sum(n_live_tup), 0), coalesce(sum(n_dead_tup), 0)"
                  + " FROM pg_stat_user_tables WHERE "
                  + relids)) {
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

    private final String prefix;

    Feeder(AtomicLong completed, String prefix) {
      this.completed = completed;
      this.prefix = prefix;
    }

    void topUp() throws SQLException {
      while (inserted - completed.get() < 2L * FEED_CHUNK) {
        try (Connection c = db.pool().getConnection();
            PreparedStatement ps =
                c.prepareStatement(
                    "INSERT INTO "
                        + T
                        + " (work_id, kind, payload) SELECT ? || g, ?,"
                        + " jsonb_build_object('n', g) FROM generate_series(?, ?) AS g")) {
          ps.setString(1, prefix);
          ps.setString(2, RelayBench.KIND);
          ps.setLong(3, inserted + 1);
          ps.setLong(4, inserted + FEED_CHUNK);
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

    void rethrow() throws SQLException {
      Exception e = failed.get();
      if (e instanceof SQLException sql) {
        throw sql;
      }
      if (e instanceof RuntimeException runtime) {
        throw runtime;
      }
    }
  }

  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%,.0f MiB", bytes / (1024.0 * 1024));
  }
}
