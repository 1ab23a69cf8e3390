package dev.relay.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What PostgreSQL itself does on this machine for Relay's statement shapes, over plain JDBC: a copy
 * of the work table (same columns, defaults, checks, indexes and fillfactor; no trigger) and of one
 * day of the history table (its columns, check and indexes, one plain table) and of the tombstone
 * table, a single-row and a multi-row insert, and claim + complete of one batch in one transaction,
 * the completion moving each row from the work table to the history table and writing its
 * tombstone, as Relay's does since schema version 25.
 */
final class LimitBench {
  static final String TABLE = "bench_limit.work";

  /** One day of the history table: where a completion moves a row. */
  static final String HISTORY = "bench_limit.history";

  /** The tombstone table: what holds a finished ID. */
  static final String TOMBSTONE = "bench_limit.tombstone";

  static final int THREADS = 2;

  private final BenchDb db;
  private final Sizes sizes;
  private final BenchIds ids;
  private final Report report;

  LimitBench(BenchDb db, Sizes sizes, BenchIds ids, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.ids = ids;
    this.report = report;
  }

  void setUp() throws SQLException {
    db.exec(
        "CREATE SCHEMA IF NOT EXISTS bench_limit",
        "DROP TABLE IF EXISTS " + TABLE,
        "CREATE TABLE "
            + TABLE
            + " (LIKE "
            + RelayBench.SCHEMA
            + ".outbox INCLUDING ALL) WITH (fillfactor = 80)",
        "DROP TABLE IF EXISTS " + HISTORY,
        "CREATE TABLE "
            + HISTORY
            + " (LIKE "
            + RelayBench.SCHEMA
            + ".work_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)",
        "DROP TABLE IF EXISTS " + TOMBSTONE,
        "CREATE TABLE " + TOMBSTONE + " (LIKE " + RelayBench.SCHEMA + ".tombstone INCLUDING ALL)");
  }

  private void truncate() throws SQLException {
    db.exec("TRUNCATE " + TABLE + ", " + HISTORY + ", " + TOMBSTONE, "VACUUM ANALYZE " + TABLE);
  }

  /**
   * One round of the insert limit: {@code items} rows, {@code perTx} per transaction, into emptied
   * tables; items/s.
   */
  double insertRound(int items, int perTx) throws SQLException {
    truncate();
    return insertRun(items, perTx);
  }

  /**
   * The rows Relay's enqueue writes (the same eight columns, defaults and expressions, from the
   * same nine typed arrays), without what Relay adds to the statement: the tombstone check, {@code
   * ON CONFLICT DO NOTHING}, {@code RETURNING} and the notification.
   */
  private static final String INSERT_MANY =
      "INSERT INTO "
          + TABLE
          + " (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline)"
          + " SELECT u.work_id, u.kind, u.payload::jsonb, u.queue, u.priority,"
          + " coalesce(u.available_at::timestamptz,"
          + " clock_timestamp() + u.delay_ms * interval '1 millisecond'),"
          + " u.max_attempts, u.deadline::timestamptz"
          + " FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int4[], ?::text[],"
          + " ?::int8[], ?::int4[], ?::text[])"
          + " AS u(work_id, kind, payload, queue, priority, available_at, delay_ms, max_attempts,"
          + " deadline)";

  private double insertRun(int items, int perTx) throws SQLException {
    try (Connection c = db.pool().getConnection();
        PreparedStatement one =
            c.prepareStatement(
                "INSERT INTO "
                    + TABLE
                    + " (work_id, kind, payload, queue, priority, available_at, max_attempts)"
                    + " VALUES (?, ?, ?::jsonb, ?, ?, clock_timestamp(), ?)");
        PreparedStatement many = c.prepareStatement(INSERT_MANY)) {
      c.setAutoCommit(false);
      long t0 = System.nanoTime();
      for (int i = 0; i < items; i += perTx) {
        int n = Math.min(perTx, items - i);
        if (n == 1) {
          one.setString(1, "l-" + i);
          one.setString(2, RelayBench.KIND);
          one.setString(3, "{\"n\":" + i + "}");
          one.setString(4, "default");
          one.setInt(5, 0);
          one.setInt(6, 25);
          one.executeUpdate();
        } else {
          String[] ids = new String[n];
          String[] kinds = new String[n];
          String[] payloads = new String[n];
          String[] queues = new String[n];
          Integer[] priorities = new Integer[n];
          String[] availableAt = new String[n];
          Long[] delays = new Long[n];
          Integer[] maxAttempts = new Integer[n];
          String[] deadlines = new String[n];
          for (int k = 0; k < n; k++) {
            ids[k] = "l-" + (i + k);
            kinds[k] = RelayBench.KIND;
            payloads[k] = "{\"n\":" + (i + k) + "}";
            queues[k] = "default";
            priorities[k] = 0;
            delays[k] = 0L;
            maxAttempts[k] = 25;
          }
          many.setArray(1, c.createArrayOf("text", ids));
          many.setArray(2, c.createArrayOf("text", kinds));
          many.setArray(3, c.createArrayOf("text", payloads));
          many.setArray(4, c.createArrayOf("text", queues));
          many.setArray(5, c.createArrayOf("int4", priorities));
          many.setArray(6, c.createArrayOf("text", availableAt));
          many.setArray(7, c.createArrayOf("int8", delays));
          many.setArray(8, c.createArrayOf("int4", maxAttempts));
          many.setArray(9, c.createArrayOf("text", deadlines));
          many.executeUpdate();
        }
        c.commit();
      }
      return items / RelayBench.seconds(t0);
    }
  }

  /** Claim + complete of {@code batch} rows in one transaction, by {@value #THREADS} threads. */
  Scenario claimComplete() throws Exception {
    Scenario s =
        report.add(
            new Scenario(
                "claim-complete",
                "postgres-limit",
                RelayBench.params("jobs", sizes.jobs(), "batch", sizes.batch(), "threads", THREADS),
                "jobs/s"));
    for (int run = 0; run < sizes.runs(); run++) {
      truncate();
      fill(sizes.jobs());
      s.add(claimCompleteRun());
    }
    return s;
  }

  /** A discarded claim+complete run of {@code jobs} rows (the bench's warm-up round). */
  void warmUp(int jobs) throws Exception {
    truncate();
    fill(jobs);
    claimCompleteRun();
    truncate();
  }

  private void fill(int jobs) throws SQLException {
    db.exec(
        "INSERT INTO "
            + TABLE
            + " (work_id, kind, payload) SELECT "
            + ids.sql("b-", "g")
            + ", '"
            + RelayBench.KIND
            + "', jsonb_build_object('n', g) FROM generate_series(1, "
            + jobs
            + ") AS g",
        "ANALYZE " + TABLE,
        "CHECKPOINT");
  }

  private double claimCompleteRun() throws Exception {
    String claim =
        "WITH c AS MATERIALIZED (SELECT work_id FROM "
            + TABLE
            + " WHERE state IN ('ready', 'running') AND queue = 'default'"
            + " AND available_at <= (SELECT clock_timestamp())"
            + " ORDER BY queue, priority DESC, available_at, work_id LIMIT ? FOR UPDATE SKIP LOCKED)"
            + " UPDATE "
            + TABLE
            + " t SET state = 'running', claimed_by = ?, lease_until = clock_timestamp() +"
            + " interval '1 minute', claim_generation = t.claim_generation + 1,"
            + " attempts = t.attempts + 1 FROM c WHERE t.work_id = c.work_id RETURNING t.work_id,"
            + " t.claim_generation";
    // The row leaves the work table and enters the history table done, and its tombstone is
    // written, in one statement.
    String complete =
        "WITH m AS (DELETE FROM "
            + TABLE
            + " WHERE work_id = ANY (?::text[]) AND claimed_by = ? RETURNING *),"
            + " f AS (INSERT INTO "
            + HISTORY
            + " (work_id, kind, payload, state, available_at, claim_generation, completed_at,"
            + " created_at, queue, priority, attempts, max_attempts, outcome)"
            + " SELECT m.work_id, m.kind, m.payload, 'done', m.available_at, m.claim_generation,"
            + " clock_timestamp(), m.created_at, m.queue, m.priority, m.attempts,"
            + " m.max_attempts, 'delivered' FROM m"
            + " RETURNING work_id, kind, payload, claim_generation, completed_at)"
            + " INSERT INTO "
            + TOMBSTONE
            + " (work_id, kind, payload_digest, last_generation, final_state, outcome, purged_at)"
            + " SELECT f.work_id, f.kind, "
            + RelayBench.SCHEMA
            + ".payload_digest(f.payload), f.claim_generation, 'done', 'delivered',"
            + " f.completed_at FROM f";
    AtomicLong doneCount = new AtomicLong();
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int t = 0; t < THREADS; t++) {
      String worker = "limit-" + t;
      Thread th =
          new Thread(
              () -> {
                try (Connection c = db.pool().getConnection();
                    PreparedStatement cl = c.prepareStatement(claim);
                    PreparedStatement co = c.prepareStatement(complete)) {
                  c.setAutoCommit(false);
                  while (true) {
                    cl.setInt(1, sizes.batch());
                    cl.setString(2, worker);
                    List<String> ids = new ArrayList<>();
                    try (ResultSet rs = cl.executeQuery()) {
                      while (rs.next()) {
                        ids.add(rs.getString(1));
                      }
                    }
                    if (ids.isEmpty()) {
                      c.commit();
                      return;
                    }
                    co.setArray(1, c.createArrayOf("text", ids.toArray()));
                    co.setString(2, worker);
                    co.executeUpdate();
                    c.commit();
                    doneCount.addAndGet(ids.size());
                  }
                } catch (Exception e) {
                  failure.compareAndSet(null, e);
                }
              },
              "bench-limit-" + t);
      th.start();
      threads.add(th);
    }
    for (Thread th : threads) {
      th.join();
    }
    if (failure.get() != null) {
      throw failure.get();
    }
    return doneCount.get() / RelayBench.seconds(t0);
  }
}
