package dev.relay.bench;

import java.sql.SQLException;
import java.time.Duration;
import java.util.stream.IntStream;
import org.jobrunr.configuration.JobRunr;
import org.jobrunr.configuration.JobRunrConfiguration.JobRunrConfigurationResult;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr with its PostgreSQL storage on the same database: jobs enqueued in bulk with no server
 * running, then one background job server drains them.
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
      result
          .getJobScheduler()
          .enqueue(IntStream.range(0, sizes.jobs()).boxed(), n -> JobRunrJobs.noop(n));
      db.exec("ANALYZE jobrunr_jobs", "CHECKPOINT");
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
