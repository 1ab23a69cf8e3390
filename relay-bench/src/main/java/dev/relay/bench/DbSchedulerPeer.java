package dev.relay.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerBuilder;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * db-scheduler on its documented PostgreSQL table: burn-down of pre-inserted one-time executions,
 * with lock-and-fetch polling and with the default (fetch, then lock on execute).
 */
final class DbSchedulerPeer {
  private static final String TABLE = "scheduled_tasks";

  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;

  DbSchedulerPeer(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
  }

  void setUp() throws SQLException {
    // The PostgreSQL DDL from db-scheduler's README (tables.sql).
    db.exec(
        "DROP TABLE IF EXISTS " + TABLE,
        """
        create table scheduled_tasks (
          task_name text not null,
          task_instance text not null,
          task_data bytea,
          execution_time timestamp with time zone not null,
          picked BOOLEAN not null,
          picked_by text,
          last_success timestamp with time zone,
          last_failure timestamp with time zone,
          consecutive_failures INT,
          last_heartbeat timestamp with time zone,
          version BIGINT not null,
          priority SMALLINT,
          PRIMARY KEY (task_name, task_instance)
        )""",
        "CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time)",
        "CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat)",
        "CREATE INDEX priority_execution_time_idx on scheduled_tasks (priority desc,"
            + " execution_time asc)");
  }

  Scenario burnDown(boolean lockAndFetch) throws Exception {
    Scenario s =
        report.add(
            new Scenario(
                "burn-down",
                "db-scheduler",
                RelayBench.params(
                    "jobs",
                    sizes.jobs(),
                    "instances",
                    1,
                    "threads",
                    sizes.workers(),
                    "polling",
                    lockAndFetch ? "lock-and-fetch(0.5,3.0)" : "default fetch-and-lock-on-execute",
                    "polling_interval_s",
                    1),
                "jobs/s"));
    for (int run = 0; run < sizes.runs(); run++) {
      db.exec("TRUNCATE " + TABLE);
      db.exec(
          "INSERT INTO "
              + TABLE
              + " (task_name, task_instance, execution_time, picked, version, priority)"
              + " SELECT 'bench-noop', 'b-' || g, now() - interval '1 second', false, 1, 0"
              + " FROM generate_series(1, "
              + sizes.jobs()
              + ") AS g",
          "ANALYZE " + TABLE,
          "CHECKPOINT");
      s.add(run(lockAndFetch));
    }
    return s;
  }

  private double run(boolean lockAndFetch) throws Exception {
    AtomicLong first = new AtomicLong();
    AtomicLong count = new AtomicLong();
    OneTimeTask<Void> task =
        Tasks.oneTime("bench-noop")
            .execute(
                (instance, context) -> {
                  first.compareAndSet(0, System.nanoTime());
                  count.incrementAndGet();
                });
    SchedulerBuilder b =
        Scheduler.create(db.pool(), task)
            .tableName(TABLE)
            .threads(sizes.workers())
            .pollingInterval(Duration.ofSeconds(1))
            .shutdownMaxWait(Duration.ofSeconds(5));
    if (lockAndFetch) {
      b.pollUsingLockAndFetch(0.5, 3.0);
    }
    Scheduler scheduler = b.build();
    long end;
    try {
      scheduler.start();
      end = PeerSupport.awaitDrained(db, count, sizes.jobs(), "SELECT count(*) FROM " + TABLE);
    } finally {
      scheduler.stop();
    }
    return sizes.jobs() / ((end - first.get()) / 1e9);
  }
}
