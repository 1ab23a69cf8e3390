package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.CancelResult;
import dev.relay.EnqueueResult;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.admin.Admin;
import dev.relay.admin.ChartWindow;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/protocol.md promises that, with the roles it lists, Relay's enqueue, claim, renew, settle,
 * kind registration (limits included), local hand-off, cancel, pause and resume run while rewriting
 * or deleting work is denied. This test runs that SQL block as written (schema and role names made
 * unique) and then each part of Relay under its role, so a new column or table that needs a grant
 * fails here first.
 */
@RelayDatabaseTest
class RoleGrantsTest {

  private static final Pattern ROLES_BLOCK =
      Pattern.compile("```sql\\n(-- Producer:.*?)```", Pattern.DOTALL);

  @Test
  void theDocumentedRolesRunEveryPartOfRelayAndNothingMore(TestDatabase db) throws Exception {
    String suffix = "_" + db.schema();
    String producer = "relay_producer" + suffix;
    String worker = "relay_worker" + suffix;
    String admin = "relay_admin" + suffix;
    db.execute(documentedRoles(db.schema(), suffix));
    try (HikariDataSource asProducer = as(db, producer);
        HikariDataSource asWorker = as(db, worker);
        HikariDataSource asAdmin = as(db, admin)) {
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      Work ack = Work.of("order-103-ack", "order_received", "{\"order\": 103}");
      try (Connection c = asProducer.getConnection()) {
        c.setAutoCommit(false);
        outbox.enqueue(c, ack);
        outbox.enqueue(c, Work.of("order-104-ack", "order_received", "{\"order\": 104}"));
        outbox.enqueue(c, Work.of("report-1", "report", "{}").group("customer-42"));
        outbox.enqueue(
            c, Work.of("order-103-received", "order_event", "{}").orderingKey("order-103"));
        outbox.enqueue(
            c, Work.of("order-103-dispatched", "order_event", "{}").orderingKey("order-103"));
        outbox.enqueue(
            c, Work.of("order-103-invoice", "order_event", "{}").dependsOn("order-103-ack"));
        // A producer outside Java: the SQL function, with an ordering key and a dependency.
        try (var s = c.createStatement();
            var rs =
                s.executeQuery(
                    "SELECT "
                        + db.schema()
                        + ".enqueue('order-103-shipped', 'order_event', '{}',"
                        + " ordering_key => 'order-103', depends_on => ARRAY['order-103-ack'])")) {
          rs.next();
          assertThat(rs.getString(1)).isEqualTo("enqueued");
        }
        c.commit();
        assertThat(outbox.enqueue(c, ack).status())
            .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
        assertThatThrownBy(
                () ->
                    outbox.enqueue(
                        c, Work.of("order-103-ack", "order_received", "{\"order\": 999}")))
            .isInstanceOf(WorkConflictException.class);
        c.rollback();
      }

      CancelResult cancelled =
          Admin.create(asAdmin, db.schema()).cancel("order-104-ack", "olga", "customer asked");
      assertThat(cancelled.status()).isEqualTo(CancelResult.Status.CANCELLED);
      Admin asAdminApi = Admin.create(asAdmin, db.schema());
      asAdminApi.pause(null, "report", "olga", "receiver down", null);
      assertThat(asAdminApi.pauses()).hasSize(1);
      assertThat(asAdminApi.resume(null, "report", "olga", "receiver back")).isPresent();
      assertThat(asAdminApi.charts(ChartWindow.DAY, null, null).points()).hasSize(96);
      assertThat(asAdminApi.pauseHistory(10)).hasSize(2);
      // A bulk cancel by filter, stored and run in batches.
      dev.relay.admin.BulkProgress bulk =
          asAdminApi.startBulk(
              dev.relay.admin.WorkFilter.all().kind("order_received").queue("nowhere"),
              dev.relay.admin.BulkAction.CANCEL,
              false,
              "olga",
              "nothing there");
      assertThat(asAdminApi.bulkPreview(bulk.filter(), bulk.action(), false).counts().matching())
          .isZero();
      assertThat(asAdminApi.runBulk(bulk.id()).state()).isEqualTo("done");

      try (Relay relay =
          Relay.builder(asWorker)
              .schema(db.schema())
              // a snooze first: the worker role updates snoozes too
              .handle(
                  "order_received",
                  claim -> claim.generation() == 1 ? Outcome.snooze(Duration.ZERO) : Outcome.done())
              .handle("order_event", claim -> Outcome.done())
              .handle(
                  "report",
                  KindPolicy.DEFAULT.withMaxRunning(1).withRateLimit(5, Duration.ofSeconds(1)),
                  claim -> Outcome.done())
              .localHandoff(true)
              .build()) {
        relay.start();
        // A local hand-off: the producer inserts the claim, the worker registered and runs it.
        Outbox handingOff = outbox.handingOffTo(relay);
        try (Connection c = asProducer.getConnection()) {
          c.setAutoCommit(false);
          // order_event: done at its first claim (order_received snoozes its first)
          handingOff.enqueue(c, Work.of("order-105-ack", "order_event", "{\"order\": 105}"));
          handingOff.commitAndStart(c);
        }
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    db.queryLong(
                            "SELECT count(*) FROM {schema}.outbox WHERE state = 'done'"
                                + " AND work_id <> 'order-104-ack'")
                        == 7);
        assertThat(
                db.queryLong(
                    "SELECT claim_generation FROM {schema}.outbox"
                        + " WHERE work_id = 'order-105-ack'"))
            .as("handed off, not claimed")
            .isEqualTo(1);
      }

      for (HikariDataSource role : new HikariDataSource[] {asProducer, asWorker, asAdmin}) {
        assertDenied(role, "UPDATE " + db.schema() + ".outbox SET payload = '{}'");
        assertDenied(role, "DELETE FROM " + db.schema() + ".outbox");
      }
      // The producer locks dependencies only through lock_dependencies: it holds no UPDATE, so
      // it cannot lock rows of its own choosing, and no other role may call the function.
      assertDenied(asProducer, "SELECT work_id FROM " + db.schema() + ".outbox FOR KEY SHARE");
      assertDenied(asProducer, "SELECT work_id FROM " + db.schema() + ".tombstone FOR KEY SHARE");
      assertDenied(
          asWorker, "SELECT " + db.schema() + ".lock_dependencies(ARRAY['order-103-ack'])");
      assertDenied(asWorker, "SELECT " + db.schema() + ".enqueue('x', 'k', '{}')");
    }
  }

  /** The roles block of docs/protocol.md, on this test's schema with unique role names. */
  private static String documentedRoles(String schema, String suffix) throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "protocol.md"));
    Matcher m = ROLES_BLOCK.matcher(doc);
    assertThat(m.find()).as("docs/protocol.md has the roles block").isTrue();
    return m.group(1)
        .replaceAll("\\b(relay_(?:producer|worker|admin))\\b", "$1" + suffix)
        .replace("relay.", schema + ".")
        .replace("SCHEMA relay ", "SCHEMA " + schema + " ");
  }

  private static HikariDataSource as(TestDatabase db, String role) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(4);
    config.setConnectionInitSql("SET ROLE " + role);
    config.setPoolName(role);
    return new HikariDataSource(config);
  }

  private static void assertDenied(HikariDataSource role, String sql) throws SQLException {
    try (Connection c = role.getConnection()) {
      assertThatThrownBy(() -> c.createStatement().execute(sql))
          .isInstanceOf(SQLException.class)
          .hasMessageContaining("permission denied");
    }
  }
}
