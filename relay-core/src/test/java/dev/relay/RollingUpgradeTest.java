package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Rolling upgrades: workers register which schema version their library knows; a runtime accepts a
 * newer schema made of expand-only versions and refuses an older one or one with a contract step it
 * predates; the migrator refuses a contract step while an older worker is live.
 */
@RelayDatabaseTest
class RollingUpgradeTest {
  /** The previous release: the versions up to 12, as it shipped them. */
  private static Migrator previousRelease(TestDatabase db) {
    return new Migrator(
        SchemaName.of(db.schema()),
        Migrator.VERSIONS.stream().filter(v -> v.number() <= 12).toList());
  }

  /** A later release with a contract step (a test resource; it drops nothing that exists). */
  private static Migrator laterReleaseWithAContractStep(TestDatabase db) {
    List<Migrator.Version> versions = new ArrayList<>(Migrator.VERSIONS);
    versions.add(
        new Migrator.Version(90, "contract probe", "contract-probe/V90__contract_drop_probe.sql"));
    return new Migrator(SchemaName.of(db.schema()), versions);
  }

  /** Registers a worker of an older release, heartbeating now. */
  private static void registerOldWorker(TestDatabase db, String id, int schemaVersion)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.worker (worker_id, relay_version, schema_version, host, stale_after)"
            + " VALUES ('"
            + id
            + "', '0.0.9', "
            + schemaVersion
            + ", 'host-a pid 7', interval '1 minute')");
  }

  /**
   * A worker registers the version its build named, not a placeholder: the resource is filtered by
   * the build, and the surefire configuration passes the same project version.
   */
  @Test
  void theRegisteredVersionIsTheBuiltOne() {
    assertThat(Relay.version())
        .isEqualTo(System.getProperty("relay.project.version"))
        .isNotEqualTo("development");
  }

  @Test
  void aRunningWorkerIsRegisteredHeartbeatsAndIsRemovedOnCleanShutdown(TestDatabase db)
      throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      Relay relay =
          f.start(
              f.builder()
                  .workerId("worker-new")
                  .renewInterval(Duration.ofMillis(200))
                  .handle("k", claim -> Outcome.done()));
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.worker WHERE worker_id = 'worker-new'"
                      + " AND relay_version = '"
                      + Relay.version()
                      + "' AND schema_version = "
                      + Migrator.LATEST_VERSION
                      + " AND stale_after > interval '0'"))
          .isEqualTo(1);
      await()
          .atMost(RelayFixture.PATIENCE)
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM {schema}.worker"
                              + " WHERE heartbeat_at > started_at")
                      == 1);

      relay.close();

      assertThat(db.queryLong("SELECT count(*) FROM {schema}.worker")).isZero();
    }
  }

  @Test
  void aContractStepIsRefusedWhileAnOlderWorkerIsLiveAndAppliedOnceItIsGone(TestDatabase db)
      throws Exception {
    registerOldWorker(db, "worker-old", 12);
    Migrator later = laterReleaseWithAContractStep(db);

    assertThatThrownBy(() -> later.migrate(db.dataSource()))
        .isInstanceOfSatisfying(
            OlderWorkersRegisteredException.class,
            e -> {
              assertThat(e.contractVersion()).isEqualTo(90);
              assertThat(e.workers())
                  .singleElement()
                  .asString()
                  .startsWith("worker-old (relay 0.0.9, knows schema version 12, on host-a pid 7");
            })
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("contract step 90 refused");
    assertThat(db.queryLong("SELECT max(version) FROM {schema}.schema_version"))
        .isEqualTo(Migrator.LATEST_VERSION);

    // The old worker died without shutting down: its heartbeat goes stale, and it counts as gone.
    db.execute(
        "UPDATE {schema}.worker SET heartbeat_at = clock_timestamp() - interval '2 minutes'");
    assertThat(later.migrate(db.dataSource()).applied()).containsExactly(90);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.schema_version WHERE contract"))
        .isEqualTo(1);

    // This release predates the contract step: it refuses to run against that schema.
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> Migrator.forSchema(db.schema()).requireCompatible(c))
          .isInstanceOf(SchemaVersionException.class)
          .hasMessageContaining("holds contract step 90")
          .hasMessageContaining("upgrade Relay");
    }
    try (RelayFixture f = new RelayFixture(db)) {
      assertThatThrownBy(() -> f.start(f.builder().handle("k", claim -> Outcome.done())))
          .isInstanceOf(SchemaVersionException.class)
          .hasMessageContaining("contract step 90");
    }
  }

  @Test
  void workersOfTheSameOrANewerReleaseDoNotHoldBackAContractStep(TestDatabase db) throws Exception {
    registerOldWorker(db, "worker-current", Migrator.LATEST_VERSION + 100);

    assertThat(laterReleaseWithAContractStep(db).migrate(db.dataSource()).applied())
        .containsExactly(90);
  }

  @Test
  void thePreviousReleaseRunsAgainstTheNewerExpandOnlySchemaButDoesNotMigrateIt(TestDatabase db)
      throws Exception {
    Migrator previous = previousRelease(db);
    try (Connection c = db.connection()) {
      assertThat(previous.requireCompatible(c)).isEqualTo(Migrator.LATEST_VERSION);
    }
    assertThatThrownBy(() -> previous.migrate(db.dataSource()))
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("newer than this library's 12");
  }

  @Test
  void thisReleaseRefusesAnOlderSchemaNamingTheWayOut(TestDatabase db) throws Exception {
    db.execute("DELETE FROM {schema}.schema_version WHERE version = " + Migrator.LATEST_VERSION);
    try (RelayFixture f = new RelayFixture(db)) {
      assertThatThrownBy(() -> f.start(f.builder().handle("k", claim -> Outcome.done())))
          .isInstanceOf(SchemaVersionException.class)
          .hasMessageContaining("older than this library's " + Migrator.LATEST_VERSION)
          .hasMessageContaining("relay migrate");
    }
  }

  @Test
  void aBurnDownRunsWhileAPreviousReleaseWorkerIsRegisteredAndProducersUseBothPaths(TestDatabase db)
      throws Exception {
    // The previous release's worker is live (registered, heartbeating) while this release runs.
    registerOldWorker(db, "worker-old", 12);
    int n = 300;
    try (RelayFixture f = new RelayFixture(db)) {
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < n / 2; i++) {
        works.add(Work.of("java-" + i, "k", "{\"i\":" + i + "}"));
      }
      f.enqueue(works);
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        for (int i = 0; i < n / 2; i++) {
          c.createStatement()
              .execute(
                  "SELECT "
                      + db.schema()
                      + ".enqueue('sql-"
                      + i
                      + "', 'k', '{\"i\": "
                      + i
                      + "}', ordering_key => 'key-"
                      + (i % 10)
                      + "')");
        }
        c.commit();
      }
      f.start(
          f.builder()
              .concurrency(8)
              .handle(
                  "k",
                  // every tenth item snoozes once first
                  claim ->
                      claim.workId().endsWith("0") && claim.generation() == 1
                          ? Outcome.snooze(Duration.ZERO)
                          : Outcome.done()));

      await()
          .atMost(Duration.ofMinutes(2))
          .until(
              () -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'") == n);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE attempts <> 1")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.worker")).isEqualTo(2);
    }
  }

  @Test
  void aProducerGrantedForThePreviousReleaseStillEnqueuesAfterTheUpgrade(TestDatabase db)
      throws Exception {
    String schema = db.schema() + "_up";
    String producer = "relay_producer_" + schema;
    db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    new Migrator(
            SchemaName.of(schema),
            Migrator.VERSIONS.stream().filter(v -> v.number() <= 12).toList())
        .migrate(db.dataSource());
    // The producer's grants as the previous release documented them: no trace_context column.
    db.execute("CREATE ROLE " + producer + " NOLOGIN");
    db.execute("GRANT USAGE ON SCHEMA " + schema + " TO " + producer);
    db.execute(
        "GRANT INSERT (work_id, kind, payload, queue, priority, available_at, max_attempts,"
            + " deadline, group_key, ordering_key, sequence, has_dependencies) ON "
            + schema
            + ".outbox TO "
            + producer);
    db.execute("GRANT SELECT (work_id, kind, payload) ON " + schema + ".outbox TO " + producer);
    db.execute("GRANT SELECT ON " + schema + ".tombstone TO " + producer);
    try {
      Outbox outbox = Outbox.builder().schema(schema).build();
      // Up to version 18 the enqueue statement's insert names a column these grants lack (the
      // insert as this release writes it; its other statements also read version 25's table).
      new Migrator(
              SchemaName.of(schema),
              Migrator.VERSIONS.stream().filter(v -> v.number() <= 18).toList())
          .migrate(db.dataSource());
      try (Connection c = db.connection()) {
        c.createStatement().execute("SET ROLE " + producer);
        try {
          assertThatThrownBy(
                  () ->
                      c.createStatement()
                          .execute(
                              "INSERT INTO "
                                  + schema
                                  + ".outbox (work_id, kind, payload, trace_context)"
                                  + " VALUES ('order-103-ack', 'order_received', '{}', NULL)"))
              .hasMessageContaining("permission denied");
        } finally {
          c.createStatement().execute("RESET ROLE");
        }
      }

      Migrator.migrate(db.dataSource(), schema);
      try (Connection c = db.connection()) {
        c.createStatement().execute("SET ROLE " + producer);
        c.setAutoCommit(false);
        assertThat(outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{}")).status())
            .isEqualTo(EnqueueResult.Status.ENQUEUED);
        c.commit();
        c.setAutoCommit(true);
        c.createStatement().execute("RESET ROLE");
      }
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM "
                      + schema
                      + ".outbox WHERE work_id = 'order-103-ack' AND trace_context IS NULL"))
          .isEqualTo(1);
      // The migration granted exactly the one column: the producer still may not set a state.
      assertThat(
              db.queryString(
                  "SELECT has_column_privilege('"
                      + producer
                      + "', '"
                      + schema
                      + ".outbox', 'trace_context', 'INSERT')::text || ' '"
                      + " || has_column_privilege('"
                      + producer
                      + "', '"
                      + schema
                      + ".outbox', 'state', 'INSERT')::text"))
          .isEqualTo("true false");
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      db.execute("DROP ROLE IF EXISTS " + producer);
    }
  }
}
