package dev.relay.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.admin.Admin;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.PayloadSearch;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The payload search ({@link Admin#searchPayload}) reads the newest items of its window through the
 * creation-time index, never more than its cap whatever the kind asked, and never the whole table.
 * Asserted on EXPLAIN ANALYZE output and on what it finds.
 */
@RelayDatabaseTest
class SearchPlanTest {
  private TestDatabase db;

  @BeforeEach
  void fill(TestDatabase db) throws SQLException {
    this.db = db;
    // 30,000 done over the last 30 days; in the last hour 2,000 more, every 100th of kind 'rare'
    // for customer 42, the others for customer 7.
    db.execute(
        """
        INSERT INTO {schema}.outbox (work_id, kind, payload, state, created_at, completed_at,
                                     claim_generation, attempts)
        SELECT 'old-' || g, 'k', '{"customer": {"id": 42}}', 'done',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds',
               clock_timestamp() - interval '30 days' + g * interval '80 seconds', 1, 1
          FROM generate_series(1, 30000) g;
        INSERT INTO {schema}.outbox (work_id, kind, payload, created_at)
        SELECT 'new-' || g, CASE WHEN g % 100 = 0 THEN 'rare' ELSE 'k' END,
               CASE WHEN g % 100 = 0 THEN '{"customer": {"id": 42}, "n": 1}'
                    ELSE '{"customer": {"id": 7}}' END::jsonb,
               clock_timestamp() - g * interval '1 second'
          FROM generate_series(1, 2000) g;
        ANALYZE {schema}.outbox;
        """);
  }

  @Test
  void theSearchReadsAtMostItsCapOfTheWindowThroughTheCreationIndex() throws Exception {
    AdminSql sql = new AdminSql(SchemaName.of(db.schema()));
    String text =
        Plans.explain(
            db,
            sql.searchPayload,
            ps -> {
              ps.setLong(1, Duration.ofDays(1).toMillis());
              ps.setNull(2, Types.BIGINT);
              ps.setNull(3, Types.BIGINT);
              ps.setInt(4, 500); // the cap
              ps.setString(5, "rare");
              ps.setString(6, "rare");
              for (int i = 7; i <= 10; i++) {
                ps.setNull(i, Types.VARCHAR);
              }
              ps.setString(11, "{\"customer\": {\"id\": 42}}");
              ps.setInt(12, 51);
            });
    assertThat(text).as(text).doesNotContain("Seq Scan on outbox");
    assertThat(text).as(text).contains("outbox_created_idx");
    assertThat(Plans.maxWorkTableRows(text)).as(text).isLessThanOrEqualTo(500);
  }

  @Test
  void theSearchFindsContainedJsonInTheWindowOnly() {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    PayloadSearch found =
        admin.searchPayload(
            WorkFilter.all().kind("rare").newerThan(Duration.ofHours(2)),
            "{\"customer\": {\"id\": 42}}",
            50);
    assertThat(found.items()).hasSize(20).allMatch(i -> i.kind().equals("rare"));
    assertThat(found.items().get(0).workId()).isEqualTo("new-100");
    assertThat(found.scanned()).isEqualTo(2000);
    assertThat(found.capped()).isFalse();
    assertThat(found.more()).isFalse();

    PayloadSearch none =
        admin.searchPayload(
            WorkFilter.all().newerThan(Duration.ofHours(2)), "{\"customer\": {\"id\": 9}}", 50);
    assertThat(none.items()).isEmpty();
    assertThat(none.scanned()).isEqualTo(2000);

    PayloadSearch some =
        admin.searchPayload(
            WorkFilter.all().newerThan(Duration.ofHours(2)), "{\"customer\": {\"id\": 7}}", 10);
    assertThat(some.items()).hasSize(10).extracting(WorkItem::workId).startsWith("new-1");
    assertThat(some.more()).isTrue();
  }

  @Test
  void aSearchWithoutAWindowOrWithInvalidJsonIsRefused() {
    Admin admin = Admin.create(db.dataSource(), db.schema());
    assertThatThrownBy(() -> admin.searchPayload(WorkFilter.all().kind("k"), "{}", 10))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("window");
    assertThatThrownBy(
            () ->
                admin.searchPayload(
                    WorkFilter.all().newerThan(Duration.ofDays(8)), "{\"a\": 1}", 10))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("7 days");
    assertThatThrownBy(
            () -> admin.searchPayload(WorkFilter.all().newerThan(Duration.ofHours(1)), "{a", 10))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("JSON");
    assertThatThrownBy(
            () ->
                admin.searchPayload(
                    WorkFilter.all().newerThan(Duration.ofHours(1)), "{\"a\": }", 10))
        .isInstanceOf(InvalidAdminRequestException.class)
        .hasMessageContaining("not valid JSON");
  }
}
