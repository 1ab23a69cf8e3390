package dev.relay.bench;

import com.gruelbox.transactionoutbox.DefaultPersistor;
import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.gruelbox.transactionoutbox.TransactionOutboxEntry;
import com.gruelbox.transactionoutbox.TransactionOutboxListener;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * gruelbox transaction-outbox with its JDBC persistor. It runs the first attempt in-process right
 * after the commit (the submitter), and finds what that missed with {@code flush()}: the steady
 * load measures the first path, the burn-down the second.
 */
final class TransactionOutboxPeer {
  private static final String TABLE = "txno_outbox";

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;
  private final TransactionManager tm;

  TransactionOutboxPeer(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
    this.tm = TransactionManager.fromDataSource(db.pool());
  }

  private TransactionOutbox outbox(
      OutboxTask task, Submitter submitter, TransactionOutboxListener listener) {
    return TransactionOutbox.builder()
        .transactionManager(tm)
        .persistor(DefaultPersistor.builder().dialect(Dialect.POSTGRESQL_9).migrate(true).build())
        .instantiator(Instantiator.using(c -> task))
        .submitter(submitter)
        .flushBatchSize(sizes.batch())
        .listener(listener)
        .build();
  }

  private void truncate() throws SQLException {
    db.exec("TRUNCATE " + TABLE);
  }

  /** Burn-down through {@code flush()}: rows left by a submitter that dropped the first attempt. */
  Scenario burnDown() throws Exception {
    Scenario s =
        report.add(
            new Scenario(
                "burn-down",
                "transaction-outbox",
                RelayBench.params(
                    "jobs",
                    sizes.jobs(),
                    "instances",
                    1,
                    "executor_threads",
                    sizes.workers(),
                    "flush_batch",
                    sizes.batch(),
                    "path",
                    "flush()"),
                "jobs/s"));
    for (int run = 0; run < sizes.runs(); run++) {
      s.add(burnDownRun());
    }
    return s;
  }

  private double burnDownRun() throws Exception {
    OutboxTask none = n -> {};
    TransactionOutbox dropping =
        outbox(none, (entry, local) -> {}, new TransactionOutboxListener() {});
    dropping.initialize();
    truncate();
    tm.inTransaction(() -> dropping.schedule(OutboxTask.class).run(0));
    cloneRows(sizes.jobs() - 1);
    AtomicLong first = new AtomicLong();
    AtomicLong count = new AtomicLong();
    OutboxTask counting =
        n -> {
          first.compareAndSet(0, System.nanoTime());
          count.incrementAndGet();
        };
    ExecutorService executor = Executors.newFixedThreadPool(sizes.workers());
    TransactionOutbox flushing =
        outbox(counting, Submitter.withExecutor(executor), new TransactionOutboxListener() {});
    AtomicReference<Exception> failure = new AtomicReference<>();
    Thread flusher =
        new Thread(
            () -> {
              try {
                while (count.get() < sizes.jobs() && !Thread.currentThread().isInterrupted()) {
                  if (!flushing.flush()) {
                    Thread.sleep(5);
                  }
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              } catch (RuntimeException e) {
                failure.set(e);
              }
            },
            "bench-txno-flush");
    long end;
    try {
      flusher.start();
      end = PeerSupport.awaitDrained(db, count, sizes.jobs(), "SELECT count(*) FROM " + TABLE);
    } finally {
      flusher.interrupt();
      flusher.join();
      executor.shutdown();
      executor.awaitTermination(30, TimeUnit.SECONDS);
    }
    if (failure.get() != null) {
      throw failure.get();
    }
    return sizes.jobs() / ((end - first.get()) / 1e9);
  }

  /** Copies the one stored row {@code copies} times under new IDs, due now. */
  private void cloneRows(int copies) throws SQLException {
    List<String> columns = new ArrayList<>();
    try (Connection c = db.pool().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT column_name FROM information_schema.columns WHERE table_name = '"
                    + TABLE
                    + "' AND table_schema = current_schema() ORDER BY ordinal_position")) {
      while (rs.next()) {
        columns.add(rs.getString(1));
      }
    }
    List<String> select = new ArrayList<>();
    for (String col : columns) {
      select.add(
          switch (col) {
            case "id" -> "gen_random_uuid()::text";
            case "uniquerequestid" -> "NULL";
            case "nextattempttime" -> "now() - interval '1 minute'";
            default -> col;
          });
    }
    db.exec(
        "UPDATE " + TABLE + " SET nextattempttime = now() - interval '1 minute'",
        "INSERT INTO "
            + TABLE
            + " ("
            + String.join(", ", columns)
            + ") SELECT "
            + String.join(", ", select)
            + " FROM "
            + TABLE
            + ", generate_series(1, "
            + copies
            + ")",
        "ANALYZE " + TABLE,
        "CHECKPOINT");
  }

  /** Steady load: the first attempt runs in-process after commit, on a pool of worker threads. */
  void steady(int rate) throws Exception {
    List<Scenario> s =
        Latencies.scenarios(
            report,
            "transaction-outbox",
            RelayBench.params(
                "rate",
                rate,
                "seconds",
                sizes.steadySeconds(),
                "path",
                "in-process after commit",
                "executor_threads",
                sizes.workers()));
    for (int run = 0; run < sizes.runs(); run++) {
      truncate();
      int total = rate * sizes.steadySeconds();
      Latencies lat = new Latencies(total);
      CountDownLatch done = new CountDownLatch(total);
      ExecutorService executor = Executors.newFixedThreadPool(sizes.workers());
      TransactionOutbox outbox =
          outbox(
              lat::started,
              Submitter.withExecutor(executor),
              new TransactionOutboxListener() {
                @Override
                public void success(TransactionOutboxEntry entry) {
                  lat.completed((Integer) entry.getInvocation().getArgs()[0]);
                  done.countDown();
                }
              });
      outbox.initialize();
      try {
        Pacer.run(
            rate,
            total,
            i -> {
              tm.inTransaction(() -> outbox.schedule(OutboxTask.class).run(i));
              lat.committed(i);
            });
        if (!done.await(sizes.steadySeconds() + 120L, TimeUnit.SECONDS)) {
          throw new IllegalStateException("transaction-outbox left " + done.getCount());
        }
      } finally {
        executor.shutdown();
        executor.awaitTermination(30, TimeUnit.SECONDS);
      }
      Latencies.record(s, lat);
    }
  }
}
