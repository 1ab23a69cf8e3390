package dev.relay.bench;

import java.sql.SQLException;
import java.time.Duration;
import org.jobrunr.configuration.JobRunr;
import org.jobrunr.configuration.JobRunrConfiguration.JobRunrConfigurationResult;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr with its PostgreSQL storage on the same database: jobs enqueued with no server running
 * (one through its API, the rest copies of that row), then one background job server drains them.
 */
final class JobRunrPeer {
  private final BenchDb db;
  private final Sizes sizes;
  private final Report report;

  JobRunrPeer(BenchDb db, Sizes sizes, Report report) {
    this.db = db;
    this.sizes = sizes;
    this.report = report;
  }

  Scenario burnDown() throws Exception {
    Scenario s =
        report.add(
            new Scenario(
                "burn-down",
                "jobrunr",
                RelayBench.params(
                    "jobs",
                    sizes.jobs(),
                    "instances",
                    1,
                    "workers",
                    sizes.workers(),
                    "poll_interval_s",
                    5),
                "jobs/s"));
    for (int run = 0; run < sizes.runs(); run++) {
      s.add(run());
    }
    return s;
  }

  private double run() throws Exception {
    JobRunrConfigurationResult result =
        JobRunr.configure()
            .useJsonMapper(new JacksonJsonMapper())
            .useStorageProvider(new PostgresStorageProvider(db.pool()))
            .useBackgroundJobServer(
                BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration()
                    .andWorkerCount(sizes.workers())
                    .andPollInterval(Duration.ofSeconds(5)),
                false)
            .initialize();
    try {
      truncate();
      JobRunrJobs.FIRST.set(0);
      JobRunrJobs.COUNT.set(0);
      // One job through JobRunr's own API, then copies of its row under new IDs: the same rows
      // its bulk enqueue writes (about a minute per 100,000 here, through its job filters), in
      // seconds. Only the drain is measured.
      result.getJobScheduler().enqueue(() -> JobRunrJobs.noop(0));
      db.exec(
          "INSERT INTO jobrunr_jobs (id, version, jobasjson, jobsignature, state, createdat,"
              + " updatedat, scheduledat, recurringjobid)"
              + " SELECT n.id, t.version, replace(t.jobasjson, t.id, n.id), t.jobsignature,"
              + " t.state, t.createdat, t.updatedat, t.scheduledat, t.recurringjobid"
              + " FROM jobrunr_jobs t CROSS JOIN generate_series(2, "
              + sizes.jobs()
              + ") AS g CROSS JOIN LATERAL (SELECT gen_random_uuid()::text || left(g::text, 0)"
              + " AS id) AS n",
          "ANALYZE jobrunr_jobs",
          "CHECKPOINT");
      long stored = db.queryLong("SELECT count(*) FROM jobrunr_jobs WHERE state = 'ENQUEUED'");
      if (stored != sizes.jobs()) {
        throw new IllegalStateException(stored + " JobRunr jobs enqueued, not " + sizes.jobs());
      }
      result.getBackgroundJobServer().start();
      long end =
          PeerSupport.awaitDrained(
              db,
              JobRunrJobs.COUNT,
              sizes.jobs(),
              "SELECT count(*) FROM jobrunr_jobs WHERE state <> 'SUCCEEDED'");
      return sizes.jobs() / ((end - JobRunrJobs.FIRST.get()) / 1e9);
    } finally {
      JobRunr.destroy();
      truncate();
    }
  }

  private void truncate() throws SQLException {
    db.exec("TRUNCATE jobrunr_jobs");
  }
}
