package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
import java.sql.Types;
import java.time.LocalDate;
import org.junit.jupiter.api.Test;

/**
 * The look for rows waiting in the default partition reads that partition only, through the parent
 * (the operator's grants are on the parent): each stretch of days without a partition is a range no
 * other partition meets, so the planner keeps the default alone. Without that, maintenance would
 * read every day of history each round to find what is usually nothing.
 */
@RelayDatabaseTest
class HistoryPlanTest {

  @Test
  void theLookForDaysInTheDefaultPartitionReadsOnlyTheDefault(TestDatabase db) throws SQLException {
    LocalDate today =
        LocalDate.parse(db.queryString("SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date"));
    // days with partitions: -5 and today .. +2 (the migration's); a gap between them
    db.execute("SELECT {schema}.add_history_day('%s')".formatted(today.minusDays(5)));
    HistorySql sql = HistorySql.of(SchemaName.of(db.schema()));
    for (LocalDate[] gap :
        new LocalDate[][] {
          {null, today.minusDays(5)},
          {today.minusDays(4), today},
          {today.plusDays(3), null},
        }) {
      String text =
          Plans.explain(
              db,
              sql.daysInDefault,
              ps -> {
                ps.setObject(1, gap[0], Types.DATE);
                ps.setObject(2, gap[1], Types.DATE);
              });
      assertThat(text).as(text).contains("work_history_default");
      assertThat(text).as(text).doesNotContainPattern("work_history_[0-9]{8}");
    }

    // And a dry run's count reads the days it would retire (and the default), not the kept ones.
    String count = Plans.explain(db, sql.countBefore, ps -> ps.setObject(1, today.minusDays(2)));
    assertThat(count).as(count).contains("work_history_default");
    assertThat(count)
        .as(count)
        .contains("work_history_" + today.minusDays(5).toString().replace("-", ""));
    assertThat(count).as(count).doesNotContain("work_history_" + today.toString().replace("-", ""));
  }
}
