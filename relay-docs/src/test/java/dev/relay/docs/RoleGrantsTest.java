package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.CancelResult;
import dev.relay.EnqueueResult;
import dev.relay.KindPolicy;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.RelayException;
import dev.relay.Schedule;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.admin.Admin;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkProgress;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Maintenance;
import dev.relay.admin.MaintenanceConfig;
import dev.relay.admin.MaintenanceResult;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.WorkFilter;
import dev.relay.schedule.Scheduler;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * docs/protocol.md shows the roles script that {@code relay migrate --roles} runs, generated from
 * Relay's grant catalog; this test checks that the block equals the generated SQL (run with {@code
 * -Drelay.docs.update=true} to rewrite it), then grants the roles on a migrated schema (twice: a
 * re-run is safe) and logs in as a LOGIN user in each role: each does its job, and every forbidden
 * statement is refused with SQLSTATE 42501.
 */
@RelayDatabaseTest
class RoleGrantsTest {
  private static final Path PROTOCOL = Path.of("..", "docs", "protocol.md");

  /** The generated block: the script for schema relay, as a fenced SQL block. */
  private static final Pattern ROLES_BLOCK =
      Pattern.compile("```sql\\n(-- Relay's roles for schema relay,.*?)```", Pattern.DOTALL);

  private static final String PASSWORD = "relay-role-test";

  private TestDatabase db;
  private String schema;
  private final List<String> createdUsers = new ArrayList<>();
  private final List<HikariDataSource> pools = new ArrayList<>();
  private List<String> roles;

  @BeforeEach
  void grant(TestDatabase db) {
    this.db = db;
    this.schema = db.schema();
    Migrator migrator = Migrator.forSchema(schema);
    roles = migrator.grantRoles(db.dataSource());
    assertThat(migrator.grantRoles(db.dataSource())).as("a re-run is safe").isEqualTo(roles);
  }

  @AfterEach
  void dropRoles() throws SQLException {
    pools.forEach(HikariDataSource::close);
    List<String> all = new ArrayList<>(createdUsers);
    all.addAll(roles);
    for (String role : all) {
      db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
    }
  }

  @Test
  void theDocumentedScriptIsTheGeneratedOne() throws Exception {
    String generated = Migrator.forSchema("relay").rolesSql();
    String doc = Files.readString(PROTOCOL);
    Matcher m = ROLES_BLOCK.matcher(doc);
    assertThat(m.find()).as("docs/protocol.md has the generated roles block").isTrue();
    if (Boolean.getBoolean("relay.docs.update")) {
      Files.writeString(
          PROTOCOL, doc.substring(0, m.start(1)) + generated + doc.substring(m.end(1)));
      return;
    }
    assertThat(m.group(1))
        .as("the roles block of docs/protocol.md (regenerate with -Drelay.docs.update=true)")
        .isEqualTo(generated);
  }

  @Test
  void theProducerEnqueuesAndCannotWriteStateOrChangeWork() throws Exception {
    HikariDataSource producer = loginAs("producer");
    Outbox outbox = Outbox.builder().schema(schema).build();
    Work ack = Work.of("order-103-ack", "order_received", "{\"order\": 103}");
    try (Connection c = producer.getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, ack);
      outbox.enqueue(c, Work.of("report-1", "report", "{}").group("customer-42"));
      outbox.enqueue(
          c, Work.of("order-103-received", "order_event", "{}").orderingKey("order-103"));
      outbox.enqueue(
          c, Work.of("order-103-invoice", "order_event", "{}").dependsOn("order-103-ack"));
      try (var s = c.createStatement();
          var rs =
              s.executeQuery(
                  "SELECT "
                      + schema
                      + ".enqueue('order-103-shipped', 'order_event', '{}',"
                      + " ordering_key => 'order-103', depends_on => ARRAY['order-103-ack'])")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("enqueued");
      }
      c.commit();
      assertThat(outbox.enqueue(c, ack).status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThatThrownBy(
              () -> outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order\": 9}")))
          .isInstanceOf(WorkConflictException.class);
      c.rollback();
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox")).isEqualTo(5);

    refusedToAll(producer);
    // No state or claim column: a finished row, or a claimed one with an endless lease, is
    // refused by the grants before the hand-off trigger is asked.
    refused(
        producer,
        "INSERT INTO %s.outbox (work_id, kind, payload, state) VALUES ('x', 'k', '{}', 'done')");
    refused(
        producer,
        "INSERT INTO %s.outbox (work_id, kind, payload, state, claimed_by, lease_until,"
            + " claim_generation, attempts, claimed_at, first_attempt_at)"
            + " VALUES ('x', 'k', '{}', 'running', 'w', 'infinity', 1, 1, now(), now())");
    refused(producer, "UPDATE %s.outbox SET state = 'done'");
    refused(producer, "DELETE FROM %s.outbox");
    refused(producer, "SELECT state FROM %s.outbox");
    refused(producer, "SELECT state FROM %s.work_history");
    refused(producer, "SELECT state FROM %s.work");
    refused(producer, "DELETE FROM %s.work_history");
    refused(producer, "SELECT work_id FROM %s.outbox FOR KEY SHARE");
    refused(producer, "SELECT work_id FROM %s.tombstone FOR KEY SHARE");
    refused(producer, "SELECT %s.handoff_lease('w', 'k', 'default')");
    refused(producer, "DELETE FROM %s.key_sequence");
    refused(producer, "INSERT INTO %s.pause (kind, actor, reason) VALUES ('k', 'a', 'r')");
    refused(producer, "UPDATE %s.schedule_state SET last_slot = now()");
  }

  @Test
  void aHandOffUserIsStillBoundByTheTrigger() throws Exception {
    // A process that hands off runs producer and worker in one user: the grants then allow the
    // claim columns, and the trigger admits only a registered hand-off's claim.
    HikariDataSource handingOff = loginAs("producer", "worker");
    try (Connection c = handingOff.getConnection()) {
      assertThatThrownBy(
              () ->
                  c.createStatement()
                      .execute(
                          ("INSERT INTO %s.outbox (work_id, kind, payload, state, claimed_by,"
                                  + " lease_until, claim_generation, attempts, claimed_at,"
                                  + " first_attempt_at) VALUES ('x', 'k', '{}', 'running', 'w',"
                                  + " 'infinity', 1, 1, now(), now())")
                              .formatted(schema)))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("23514"));
    }
  }

  @Test
  void theWorkerRunsTheOrderStoryAndChangesOnlyStateColumns() throws Exception {
    HikariDataSource producer = loginAs("producer");
    HikariDataSource worker = loginAs("worker");
    HikariDataSource handingOff = loginAs("producer", "worker");
    Outbox outbox = Outbox.builder().schema(schema).build();
    try (Connection c = producer.getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order\": 103}"));
      outbox.enqueue(c, Work.of("report-1", "report", "{}").group("customer-42"));
      outbox.enqueue(c, Work.of("order-103-received", "order_event", "{}").orderingKey("o-103"));
      outbox.enqueue(c, Work.of("order-103-shipped", "order_event", "{}").orderingKey("o-103"));
      outbox.enqueue(
          c, Work.of("order-103-invoice", "order_event", "{}").dependsOn("order-103-ack"));
      c.commit();
    }
    // A pause of a kind nobody handles: every claim reads the pause table.
    Admin.create(loginAs("operator"), schema).pause(null, "elsewhere", "olga", "drill", null);
    try (Relay relay =
        Relay.builder(worker)
            .schema(schema)
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
      try (Connection c = handingOff.getConnection()) {
        c.setAutoCommit(false);
        Outbox handing = outbox.handingOffTo(relay);
        handing.enqueue(c, Work.of("order-105-ack", "order_event", "{\"order\": 105}"));
        handing.commitAndStart(c);
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'") == 6);
      assertThat(
              db.queryLong(
                  "SELECT claim_generation FROM {schema}.work WHERE work_id = 'order-105-ack'"))
          .as("handed off, not claimed")
          .isEqualTo(1);
    }

    refusedToAll(worker);
    for (String column :
        List.of(
            "cancel_requested_at = now()",
            "horizon_start = now()",
            "queue = 'q'",
            "priority = 9",
            "deadline = now()",
            "max_attempts = 1",
            "group_key = 'g'",
            "ordering_key = 'k'",
            "sequence = 1",
            "has_dependencies = true",
            "trace_context = '{}'",
            "created_at = now()")) {
      refused(worker, "UPDATE %s.outbox SET " + column);
    }
    refused(worker, "INSERT INTO %s.outbox (work_id, kind, payload) VALUES ('x', 'k', '{}')");
    refused(worker, "SELECT %s.enqueue('x', 'k', '{}')");
    refused(worker, "SELECT %s.lock_dependencies(ARRAY['order-103-ack'])");
    // The worker deletes from outbox only to move finished work (it holds DELETE for the settle's
    // move, V25); the history table it only appends to.
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work_history WHERE state = 'done'"))
        .as("completed work moved to the history table by the worker role")
        .isEqualTo(6);
    refused(worker, "DELETE FROM %s.work_history");
    refused(worker, "UPDATE %s.work_history SET state = 'cancelled'");
    refused(worker, "SELECT %s.retire_history_day(current_date - 30, now())");
    refused(worker, "SELECT %s.reopen_history(ARRAY['order-103-ack'])");
    refused(worker, "DELETE FROM %s.attempt");
    refused(worker, "UPDATE %s.attempt SET error = 'x'");
    refused(worker, "DELETE FROM %s.pause");
    // it writes a finished ID's tombstone as it moves the row, and can neither change nor remove
    // one
    refused(worker, "DELETE FROM %s.tombstone");
    refused(worker, "UPDATE %s.tombstone SET purged_at = now()");
    refused(worker, "DELETE FROM %s.rollup");
  }

  @Test
  void theSchedulerEnqueuesItsSlots() throws Exception {
    HikariDataSource scheduler = loginAs("scheduler");
    try (Scheduler s =
        Scheduler.builder(scheduler)
            .schema(schema)
            .schedule("nightly-report", "report", Schedule.every(Duration.ofSeconds(1)))
            .pollInterval(Duration.ofMillis(200))
            .build()) {
      s.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE kind = 'report'") > 0);
    }
    assertThat(db.queryLong("SELECT enqueued FROM {schema}.schedule_state")).isPositive();
    refusedToAll(scheduler);
    refused(scheduler, "UPDATE %s.schedule_state SET kind = 'other'");
    refused(scheduler, "UPDATE %s.schedule_state SET definition = 'x'");
    refused(scheduler, "DELETE FROM %s.schedule_state");
    refused(scheduler, "DELETE FROM %s.outbox");
    refused(scheduler, "UPDATE %s.outbox SET state = 'done'");
  }

  @Test
  void theOperatorRedrivesCancelsPausesPurgesAndCannotEnqueueOrClaim() throws Exception {
    HikariDataSource producer = loginAs("producer");
    HikariDataSource operatorPool = loginAs("operator");
    Outbox outbox = Outbox.builder().schema(schema).build();
    try (Connection c = producer.getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("order-104-ack", "order_received", "{}"));
      outbox.enqueue(c, Work.of("order-106-ack", "order_received", "{}"));
      outbox.enqueue(c, Work.of("order-107-ack", "order_received", "{}"));
      outbox.enqueue(c, Work.of("order-100-ack", "order_received", "{}"));
      c.commit();
    }
    // Failed and long done, as a worker would have left them.
    db.execute(
        "UPDATE {schema}.outbox SET state = 'failed', completed_at = now(), attempts = 1"
            + " WHERE work_id = 'order-106-ack';"
            + "UPDATE {schema}.outbox SET state = 'done', completed_at = now() - interval '200 days',"
            + " attempts = 1, first_attempt_at = now() - interval '200 days'"
            + " WHERE work_id = 'order-100-ack'");

    Admin admin = Admin.create(operatorPool, schema);
    assertThat(admin.cancel("order-104-ack", "olga", "customer asked").status())
        .isEqualTo(CancelResult.Status.CANCELLED);
    assertThat(admin.redrive("order-106-ack", RedriveRequest.of("mina", "receiver fixed")))
        .isNotNull();
    assertThat(db.queryString("SELECT state FROM {schema}.outbox WHERE work_id = 'order-106-ack'"))
        .isEqualTo("ready");
    admin.pause(null, "report", "olga", "receiver down", null);
    assertThat(admin.pauses()).hasSize(1);
    assertThat(admin.resume(null, "report", "olga", "receiver back")).isPresent();
    assertThat(admin.pauseHistory(10)).hasSize(2);
    BulkProgress bulk =
        admin.startBulk(
            WorkFilter.all().kind("order_received").queue("default"),
            BulkAction.CANCEL,
            false,
            "olga",
            "order stream retired");
    assertThat(admin.runBulk(bulk.id()).state()).isEqualTo("done");
    assertThat(admin.list(WorkFilter.all(), null, 10).items()).hasSize(4);
    assertThat(admin.show("order-104-ack")).isPresent();
    assertThat(admin.charts(ChartWindow.DAY, null, null).points()).hasSize(96);
    // A bulk purge by filter: the row goes, a tombstone and an audit row are written.
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload, state, completed_at, attempts,"
            + " claim_generation) VALUES ('order-90-ack', 'order_archive', '{}', 'done',"
            + " now() - interval '2 days', 1, 1)");
    BulkProgress purge =
        admin.startBulk(
            WorkFilter.all().kind("order_archive"), BulkAction.PURGE, false, "olga", "archived");
    assertThat(admin.runBulk(purge.id()).counts().changed()).isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.purge_item_audit")).isEqualTo(1);
    // Maintenance (purge, rollup fold, summary refresh, expired pauses) runs as the operator.
    try (Maintenance maintenance =
        Maintenance.create(
            operatorPool,
            () -> DriverManager.getConnection(urlFor(schema + "_as_operator")),
            MaintenanceConfig.DEFAULT.withSchema(schema))) {
      MaintenanceResult result = maintenance.runOnce();
      assertThat(result.leader()).isTrue();
      assertThat(result.purge().work()).isEqualTo(1);
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(2);
    assertThat(admin.purge(PurgePolicy.DEFAULT, true, "olga", "dry run").work()).isZero();

    refusedToAll(operatorPool);
    // It cannot enqueue: no INSERT on work.
    try (Connection c = operatorPool.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> outbox.enqueue(c, Work.of("x", "k", "{}")))
          .isInstanceOfSatisfying(
              RelayException.class, e -> assertThat(e.sqlState()).isEqualTo("42501"));
      c.rollback();
    }
    refused(operatorPool, "SELECT %s.enqueue('x', 'k', '{}')");
    // It cannot claim: a claim advances the generation and records attempts.
    refused(operatorPool, "UPDATE %s.outbox SET claim_generation = claim_generation + 1");
    refused(
        operatorPool,
        "INSERT INTO %s.attempt (work_id, generation, ending) VALUES ('x', 1, 'retry')");
    refused(operatorPool, "UPDATE %s.outbox SET result = '{}'");
    refused(operatorPool, "SELECT %s.handoff_lease('w', 'k', 'default')");
    refused(
        operatorPool,
        "INSERT INTO %s.kind (kind, backoff_base, backoff_cap, max_attempts,"
            + " max_elapsed, handler_timeout, dedup_horizon, unknown_outcome, registered_by)"
            + " VALUES ('k', '1s', '1s', 1, '1s', '1s', '1s', 'retry', 'x')");
    refused(operatorPool, "DELETE FROM %s.schema_version");
  }

  @Test
  void aSupersedeNeedsAnOperatorWhoIsAlsoAProducer() throws Exception {
    HikariDataSource producer = loginAs("producer");
    Outbox outbox = Outbox.builder().schema(schema).build();
    try (Connection c = producer.getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueue(c, Work.of("order-108-mail", "mail", "{\"to\": \"old@example.com\"}"));
      c.commit();
    }
    Work corrected = Work.of("order-108-mail-2", "mail", "{\"to\": \"new@example.com\"}");
    Admin operatorOnly = Admin.create(loginAs("operator"), schema);
    assertThatThrownBy(() -> operatorOnly.supersede("order-108-mail", corrected, "olga", "typo"))
        .isInstanceOfSatisfying(
            RelayException.class, e -> assertThat(e.sqlState()).isEqualTo("42501"));
    assertThat(db.queryString("SELECT state FROM {schema}.outbox WHERE work_id = 'order-108-mail'"))
        .as("nothing changed")
        .isEqualTo("ready");
    Admin both = Admin.create(loginAs("operator", "producer"), schema);
    assertThat(both.supersede("order-108-mail", corrected, "olga", "typo").newWorkId())
        .isEqualTo("order-108-mail-2");
    assertThat(db.queryString("SELECT state FROM {schema}.outbox WHERE work_id = 'order-108-mail'"))
        .isEqualTo("cancelled");
  }

  /** What nobody may do: change a work item's identity, or write the schema's versions. */
  private void refusedToAll(HikariDataSource role) throws SQLException {
    refused(role, "UPDATE %s.outbox SET payload = '{}'");
    refused(role, "UPDATE %s.outbox SET kind = 'other'");
    refused(role, "UPDATE %s.outbox SET work_id = 'other'");
    refused(role, "UPDATE %s.tombstone SET payload_digest = 'x'");
    refused(role, "INSERT INTO %s.schema_version (version, description) VALUES (999, 'x')");
    refused(role, "TRUNCATE %s.outbox");
  }

  private void refused(HikariDataSource role, String sqlTemplate) throws SQLException {
    String sql = sqlTemplate.formatted(schema);
    try (Connection c = role.getConnection()) {
      assertThatThrownBy(() -> c.createStatement().execute(sql))
          .as(sql)
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> assertThat(e.getSQLState()).as(sql + ": " + e.getMessage()).isEqualTo("42501"));
    }
  }

  /** A pool of a new LOGIN user that is a member of the schema's roles named by suffix. */
  private HikariDataSource loginAs(String... roleSuffixes) throws SQLException {
    String user = schema + "_as_" + String.join("_", roleSuffixes);
    List<String> memberOf = new ArrayList<>();
    for (String suffix : roleSuffixes) {
      memberOf.add(schema + "_" + suffix);
    }
    db.execute(
        "CREATE ROLE "
            + user
            + " LOGIN PASSWORD '"
            + PASSWORD
            + "' IN ROLE "
            + String.join(", ", memberOf));
    createdUsers.add(0, user);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(urlFor(user));
    config.setMaximumPoolSize(4);
    config.setPoolName(user);
    HikariDataSource pool = new HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  private String urlFor(String user) {
    String url = db.jdbcUrl();
    String credentials = "user=" + user + "&password=" + PASSWORD;
    return url.contains("user=")
        ? url.replaceFirst("user=[^&]*", credentials)
        : url + (url.contains("?") ? "&" : "?") + credentials;
  }
}
