package dev.relay.bench;

import dev.relay.ManualClaims;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@code --only ready-index}: what the partial index for the console's ready list ({@code
 * (created_at, work_id) WHERE state = 'ready'}) costs on the write path, measured in ways a busy
 * machine does not blur. Two schemas migrated alike: {@link RelayBench#SCHEMA} without the index
 * (dropped if the schema has it) and {@link #WITH} with it.
 *
 * <ul>
 *   <li><b>WAL bytes</b> per enqueue (1 and 100 per transaction, through {@link Outbox}) and per
 *       claim+settle cycle (claims of 100 through {@link ManualClaims}, each settled done): the WAL
 *       records written by the bench's own transactions (matched by transaction ID with {@code
 *       pg_walinspect}, so other sessions' writes to the same server do not count), after a
 *       CHECKPOINT, so both schemas pay the same full-page images. Deterministic up to those.
 *   <li><b>Paired throughput</b>: many short rounds A B B A (without, with, with, without), each
 *       round into both schemas, and the median of the per-round ratios with/without: load that
 *       drifts over seconds cancels within a round.
 * </ul>
 *
 * <p>Needs a superuser (or pg_read_server_files) for {@code pg_walinspect} (PostgreSQL 15+).
 */
final class ReadyIndexBench {
  static final String WITH = "relay_bench_ready";
  static final String INDEX = "outbox_ready_created_idx";

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;

  ReadyIndexBench(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
  }

  void run() throws Exception {
    Migrator.migrate(db.pool(), WITH);
    db.exec(
        "CREATE EXTENSION IF NOT EXISTS pg_walinspect",
        "DROP INDEX IF EXISTS " + RelayBench.SCHEMA + "." + INDEX,
        "CREATE INDEX IF NOT EXISTS "
            + INDEX
            + " ON "
            + WITH
            + ".outbox (created_at, work_id) WHERE state = 'ready'");
    int walItems = sizes.jobs() >= 20_000 ? 20_000 : sizes.jobs();
    for (int perTx : new int[] {1, 100}) {
      for (String schema : new String[] {RelayBench.SCHEMA, WITH}) {
        truncate(schema);
        db.exec("CHECKPOINT");
        long[] wal = enqueue(schema, walItems, perTx, "w", true);
        double perItem = (double) wal[0] / walItems;
        report
            .add(
                new Scenario(
                    "wal-per-enqueue",
                    "relay",
                    RelayBench.params("per_tx", perTx, "index", schema.equals(WITH)),
                    "bytes"))
            .add(perItem);
        report.log(
            String.format(
                Locale.ROOT,
                "WAL %s, %d per tx: %.1f bytes/enqueue (%d records, %d bytes of full-page images)",
                label(schema),
                perTx,
                perItem,
                wal[1],
                wal[2]));
      }
    }
    for (String schema : new String[] {RelayBench.SCHEMA, WITH}) {
      db.exec("CHECKPOINT");
      long[] wal = claimSettle(schema);
      double perItem = (double) wal[0] / walItems;
      report
          .add(
              new Scenario(
                  "wal-per-claim-settle",
                  "relay",
                  RelayBench.params("claim", 100, "index", schema.equals(WITH)),
                  "bytes"))
          .add(perItem);
      report.log(
          String.format(
              Locale.ROOT,
              "WAL %s, claim 100 + settle each: %.1f bytes/item (%d records, %d FPI bytes)",
              label(schema),
              perItem,
              wal[1],
              wal[2]));
    }
    paired(1, sizes.jobs() >= 20_000 ? 1_000 : 100, sizes.jobs() >= 20_000 ? 10 : 2);
    paired(100, sizes.jobs() >= 20_000 ? 5_000 : 500, sizes.jobs() >= 20_000 ? 20 : 2);
    truncate(RelayBench.SCHEMA);
    truncate(WITH);
  }

  private static String label(String schema) {
    return schema.equals(WITH) ? "with the ready index" : "without";
  }

  /** Empties the work, its history (settled rows moved there hold their IDs) and the attempts. */
  private void truncate(String schema) throws SQLException {
    db.exec(
        "TRUNCATE "
            + schema
            + ".outbox, "
            + schema
            + ".work_history, "
            + schema
            + ".tombstone, "
            + schema
            + ".attempt CASCADE");
  }

  /**
   * Rounds of A B B A (without, with, with, without: both orders in each round, so a trend within
   * the round cancels), {@code items} enqueues each; reports the median of the per-round ratios of
   * throughput with/without.
   */
  private void paired(int perTx, int items, int rounds) throws SQLException {
    truncate(RelayBench.SCHEMA);
    truncate(WITH);
    // One untimed warm-up into each, so neither pays the JIT or the first pages.
    enqueue(RelayBench.SCHEMA, items, perTx, "warm", false);
    enqueue(WITH, items, perTx, "warm", false);
    double[] ratios = new double[rounds];
    double[] without = new double[rounds];
    double[] with = new double[rounds];
    for (int r = 0; r < rounds; r++) {
      long a1 = timed(RelayBench.SCHEMA, items, perTx, "p" + r + "a");
      long b1 = timed(WITH, items, perTx, "p" + r + "b");
      long b2 = timed(WITH, items, perTx, "p" + r + "c");
      long a2 = timed(RelayBench.SCHEMA, items, perTx, "p" + r + "d");
      without[r] = 2.0 * items / ((a1 + a2) / 1e9);
      with[r] = 2.0 * items / ((b1 + b2) / 1e9);
      ratios[r] = with[r] / without[r];
    }
    double[] sorted = ratios.clone();
    Arrays.sort(sorted);
    double median =
        rounds % 2 == 1 ? sorted[rounds / 2] : (sorted[rounds / 2 - 1] + sorted[rounds / 2]) / 2;
    Arrays.sort(without);
    Arrays.sort(with);
    report
        .add(
            new Scenario(
                "paired-enqueue-ratio",
                "relay",
                RelayBench.params("per_tx", perTx, "items", items, "rounds", rounds),
                "with/without"))
        .add(median);
    report.log(
        String.format(
            Locale.ROOT,
            "paired, %d per tx, %d rounds ABBA of %d: median ratio with/without %.3f (min %.3f,"
                + " max %.3f); medians %.0f vs %.0f items/s",
            perTx,
            rounds,
            items,
            median,
            sorted[0],
            sorted[rounds - 1],
            with[rounds / 2],
            without[rounds / 2]));
  }

  private long timed(String schema, int items, int perTx, String prefix) throws SQLException {
    long t0 = System.nanoTime();
    enqueue(schema, items, perTx, prefix, false);
    return System.nanoTime() - t0;
  }

  /**
   * Enqueues {@code items}, {@code perTx} per transaction; with {@code wal}, returns the WAL of
   * these transactions: {bytes, records, full-page-image bytes}.
   */
  private long[] enqueue(String schema, int items, int perTx, String prefix, boolean wal)
      throws SQLException {
    Outbox outbox = Outbox.builder().schema(schema).notifications(false).build();
    List<Long> xids = new ArrayList<>();
    String start;
    try (Connection c = db.pool().getConnection()) {
      start = lsn(c);
      c.setAutoCommit(false);
      List<Work> batch = new ArrayList<>(perTx);
      for (int i = 0; i < items; i++) {
        batch.add(Work.of(prefix + "-" + i, RelayBench.KIND, "{\"n\":" + i + "}"));
        if (batch.size() == perTx || i == items - 1) {
          if (batch.size() == 1) {
            outbox.enqueue(c, batch.get(0));
          } else {
            outbox.enqueueAll(c, batch);
          }
          if (wal) {
            xids.add(xid(c));
          }
          c.commit();
          batch.clear();
        }
      }
      c.setAutoCommit(true);
      return wal ? walOf(c, start, xids) : null;
    }
  }

  /** Claims everything in batches of 100 and settles each claim done; WAL as for enqueue. */
  private long[] claimSettle(String schema) throws SQLException {
    ManualClaims manual = ManualClaims.forSchema(schema);
    try (Connection c = db.pool().getConnection();
        Connection x = db.pool().getConnection()) {
      String start = lsn(c);
      long firstXid;
      try (Statement s = x.createStatement();
          ResultSet rs = s.executeQuery("SELECT txid_current()")) {
        rs.next();
        firstXid = rs.getLong(1);
      }
      while (true) {
        ManualClaims.Batch b =
            manual.claim(
                c,
                "bench-ready",
                List.of("default"),
                List.of(RelayBench.KIND),
                100,
                Duration.ofMinutes(5));
        if (b.claimed().isEmpty()) {
          break;
        }
        for (var h : b.claimed()) {
          manual.settle(c, h, Outcome.done());
        }
      }
      // Autocommit writes: every transaction of this connection between the two marks. The
      // mark connection's own two transactions write only their commit records (no rows).
      long lastXid;
      try (Statement s = x.createStatement();
          ResultSet rs = s.executeQuery("SELECT txid_current()")) {
        rs.next();
        lastXid = rs.getLong(1);
      }
      return walOfPid(c, start, firstXid, lastXid);
    }
  }

  private static String lsn(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static long xid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT txid_current() % 4294967296")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long[] walOf(Connection c, String start, List<Long> xids) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT coalesce(sum(record_length), 0), count(*), coalesce(sum(fpi_length), 0)"
                + " FROM pg_get_wal_records_info(?::pg_lsn, pg_current_wal_flush_lsn())"
                + " WHERE xid::text::bigint = ANY (?)")) {
      ps.setString(1, start);
      ps.setArray(2, c.createArrayOf("bigint", xids.toArray()));
      return row(ps);
    }
  }

  /**
   * WAL of the transactions whose ID lies strictly between two marks and that the bench's claim
   * connection ran: other sessions' transactions in that range are told apart by the database in
   * each record's block reference; commit records carry none and are counted by transaction.
   */
  private long[] walOfPid(Connection c, String start, long firstXid, long lastXid)
      throws SQLException {
    long lo = firstXid % 4294967296L;
    long hi = lastXid % 4294967296L;
    long dbOid;
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT oid FROM pg_database WHERE datname = current_database()")) {
      rs.next();
      dbOid = rs.getLong(1);
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "WITH r AS (SELECT * FROM pg_get_wal_records_info(?::pg_lsn,"
                + " pg_current_wal_flush_lsn()) WHERE xid::text::bigint > ? AND"
                + " xid::text::bigint < ?), mine AS (SELECT DISTINCT xid FROM r WHERE block_ref"
                + " LIKE ?) SELECT coalesce(sum(record_length), 0), count(*),"
                + " coalesce(sum(fpi_length), 0) FROM r WHERE xid IN (SELECT xid FROM mine)")) {
      ps.setString(1, start);
      ps.setLong(2, lo);
      ps.setLong(3, hi);
      ps.setString(4, "%/" + dbOid + "/%");
      return row(ps);
    }
  }

  private static long[] row(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)};
    }
  }
}
