package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.admin.Admin;
import dev.relay.admin.LimitUse;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the console's limits page reads ({@link Admin#limitUse()}): right counts, through a partial
 * index of running work, never a scan of the work table. Asserted on EXPLAIN ANALYZE output and on
 * the values, not on timings.
 */
@RelayDatabaseTest
class LimitUsePlanTest {

  @Test
  void limitUseCountsLiveClaimsGroupsAndTheRateWindowThroughIndexes(TestDatabase db)
      throws SQLException {
    // 30,000 done of the limited kind, 7 live claims in two groups and 2 with an expired lease;
    // 40 claims in the log, 25 of them within the last minute.
    db.execute(
        """
        INSERT INTO {schema}.limiter (kind, max_running, max_running_per_group, rate_limit,
                                      rate_interval)
        VALUES ('mail', 10, 5, 100, interval '1 minute'), ('sms', 3, NULL, NULL, NULL);
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at,
                                     claim_generation, attempts)
        SELECT 'done-' || g, 'mail', '{}', 'done', clock_timestamp(), 1, 1
          FROM generate_series(1, 30000) g;
        -- inserted ready, then claimed (only a local hand-off inserts a claim)
        INSERT INTO {schema}.outbox (work_id, kind, payload, group_key)
        SELECT 'run-' || g, 'mail', '{}', CASE WHEN g <= 5 THEN 'tenant-a' ELSE 'tenant-b' END
          FROM generate_series(1, 9) g;
        UPDATE {schema}.outbox
           SET state = 'running', claimed_by = 'w1', claim_generation = 1, attempts = 1,
               lease_until = clock_timestamp()
                             + CASE WHEN substr(work_id, 5)::int <= 7 THEN interval '1 hour'
                                    ELSE interval '-1 hour' END
         WHERE work_id LIKE 'run-%';
        INSERT INTO {schema}.claim_log (kind, group_key, work_id, claimed_at)
        SELECT 'mail', '', 'log-' || g,
               clock_timestamp() - CASE WHEN g <= 25 THEN interval '10 seconds'
                                        ELSE interval '10 minutes' END
          FROM generate_series(1, 40) g;
        ANALYZE {schema}.outbox;
        ANALYZE {schema}.claim_log;
        """);
    AdminSql sql = new AdminSql(dev.relay.internal.jdbc.SchemaName.of(db.schema()));
    String text = Plans.explain(db, sql.limitUse, ps -> {});
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    // Either partial index of running work serves it (both hold running work only).
    assertThat(text).as(text).containsAnyOf("outbox_running_group_idx", "outbox_claimed_by_idx");
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThan(100);

    List<LimitUse> use = Admin.create(db.dataSource(), db.schema()).limitUse();
    assertThat(use).extracting(LimitUse::kind).containsExactly("mail", "sms");
    LimitUse mail = use.get(0);
    assertThat(mail.running()).isEqualTo(7);
    assertThat(mail.windowClaims()).isEqualTo(25);
    assertThat(mail.limits().rateInterval()).isEqualTo(Duration.ofMinutes(1));
    assertThat(mail.busiestGroups())
        .containsExactly(
            new LimitUse.GroupUse("tenant-a", 5), new LimitUse.GroupUse("tenant-b", 2));
    LimitUse sms = use.get(1);
    assertThat(sms.running()).isZero();
    assertThat(sms.windowClaims()).isNull();
    assertThat(sms.busiestGroups()).isEmpty();
  }
}
