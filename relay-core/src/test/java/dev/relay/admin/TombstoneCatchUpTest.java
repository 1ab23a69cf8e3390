package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A schedule's catch-up window ({@code missed each(window)}) must stay shorter than the tombstones'
 * identity horizon, or a late slot enqueued again after its work was purged would run as new work.
 * Retention enforces it: tombstones are kept at least as long as the longest window.
 */
@RelayDatabaseTest
class TombstoneCatchUpTest {
  private static final PurgePolicy ONE_DAY =
      PurgePolicy.DEFAULT.withIdentityHorizon(Duration.ofDays(1));

  private static void tombstone(TestDatabase db, String id, String age) throws Exception {
    db.execute(
        "INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,"
            + " final_state, purged_at) VALUES ('"
            + id
            + "', 'report', 'x', 1, 'done', clock_timestamp() - interval '"
            + age
            + "')");
  }

  @Test
  void tombstonesOutliveTheLongestCatchUpWindowOfASchedule(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.schedule_state (name, kind, definition) VALUES"
            + " ('nightly', 'report', 'cron \"30 2 * * *\" Europe/Berlin missed=each(PT72H)'),"
            + " ('hourly', 'report', 'every PT1H missed=latest')");
    tombstone(db, "nightly@2d", "2 days");
    tombstone(db, "nightly@4d", "4 days");
    Admin admin = Admin.create(db.dataSource(), db.schema());
    assertThat(admin.purge(ONE_DAY, true).tombstones()).isEqualTo(1);
    PurgeResult r = admin.purge(ONE_DAY, false);
    assertThat(r.tombstones()).isEqualTo(1);
    assertThat(db.queryString("SELECT string_agg(work_id, ',') FROM {schema}.tombstone"))
        .isEqualTo("nightly@2d");
  }

  @Test
  void withoutACatchUpWindowTheConfiguredHorizonApplies(TestDatabase db) throws Exception {
    db.execute(
        "INSERT INTO {schema}.schedule_state (name, kind, definition) VALUES"
            + " ('hourly', 'report', 'every PT1H missed=latest')");
    tombstone(db, "old", "2 days");
    assertThat(Admin.create(db.dataSource(), db.schema()).purge(ONE_DAY, false).tombstones())
        .isEqualTo(1);
  }
}
