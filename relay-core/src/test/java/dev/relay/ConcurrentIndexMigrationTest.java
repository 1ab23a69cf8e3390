package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * A version marked {@value Migrator#CONCURRENT_MARKER} builds its index with {@code CREATE INDEX
 * CONCURRENTLY} outside the migration's transaction: writes go on during the build, a failed build
 * leaves no recorded version and is built again by the next migration, and a file that holds
 * anything else is refused before anything runs.
 */
@RelayDatabaseTest
class ConcurrentIndexMigrationTest {

  /** A later release: the shipped versions plus the named probes (test resources). */
  private static Migrator laterRelease(TestDatabase db, String... probes) {
    List<Migrator.Version> versions = new ArrayList<>(Migrator.VERSIONS);
    for (String probe : probes) {
      int number = Integer.parseInt(probe.substring(1, probe.indexOf("__")));
      versions.add(new Migrator.Version(number, probe, "concurrent-probe/" + probe + ".sql"));
    }
    return new Migrator(SchemaName.of(db.schema()), versions);
  }

  private static boolean indexValid(TestDatabase db, String index) throws Exception {
    return db.queryLong(
            "SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid = to_regclass('"
                + db.schema()
                + "."
                + index
                + "')")
        == 1;
  }

  private static long recorded(TestDatabase db, int version) throws Exception {
    return db.queryLong("SELECT count(*) FROM {schema}.schema_version WHERE version = " + version);
  }

  @Test
  void theIndexIsBuiltOutsideTheTransactionAndTheNextVersionsFollowInTheSameRun(TestDatabase db)
      throws Exception {
    Migrator later = laterRelease(db, "V90__concurrently_probe_index", "V91__after_probe");

    assertThat(later.migrate(db.dataSource()).applied()).containsExactly(90, 91);

    assertThat(indexValid(db, "outbox_probe_kind_created")).isTrue();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.probe_after")).isZero();
    assertThat(recorded(db, 90)).isEqualTo(1);
    assertThat(recorded(db, 91)).isEqualTo(1);
    assertThat(later.migrate(db.dataSource()).applied()).isEmpty();
    // No migration lock of this schema is left behind (none is held across the build). Only this
    // schema's key counts: other sessions on a shared server hold advisory locks of their own.
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    + " AND objid::bigint = (hashtext('"
                    + db.schema()
                    + "')::bigint & 4294967295)"))
        .isZero();
  }

  @Test
  void writesGoOnWhileTheBuildWaitsForAnOpenTransaction(TestDatabase db) throws Exception {
    Migrator later = laterRelease(db, "V90__concurrently_probe_index");
    try (Connection open = db.connection()) {
      open.setAutoCommit(false);
      try (Statement s = open.createStatement()) {
        s.execute(
            "INSERT INTO "
                + db.schema()
                + ".outbox (work_id, kind, payload) VALUES ('open-1', 'k', '{}')");
      }
      CompletableFuture<Migrator.Report> migration =
          CompletableFuture.supplyAsync(() -> later.migrate(db.dataSource()));
      // The build waits for the open transaction, as a concurrent build does.
      await()
          .atMost(Duration.ofMinutes(1))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                              + " AND query LIKE '%CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_probe%'")
                      == 1);
      // Meanwhile another writer inserts and commits: a plain CREATE INDEX would have queued a
      // SHARE lock that this insert waits behind (the lock timeout turns such a wait into an
      // error).
      try (Connection writer = db.connection();
          Statement s = writer.createStatement()) {
        s.execute("SET lock_timeout = '30s'");
        s.execute(
            "INSERT INTO "
                + db.schema()
                + ".outbox (work_id, kind, payload) VALUES ('during-build', 'k', '{}')");
      }
      assertThat(migration).isNotDone();
      open.commit();
      assertThat(migration.get().applied()).containsExactly(90);
    }
    assertThat(indexValid(db, "outbox_probe_kind_created")).isTrue();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(2);
  }

  @Test
  void aFailedBuildRecordsNothingAndTheNextMigrationBuildsItAgain(TestDatabase db)
      throws Exception {
    db.execute(
        "INSERT INTO {schema}.outbox (work_id, kind, payload)"
            + " VALUES ('twin-1', 'k', '{\"same\": 1}'), ('twin-2', 'k', '{\"same\": 1}')");
    Migrator later = laterRelease(db, "V92__concurrently_unique_probe");

    assertThatThrownBy(() -> later.migrate(db.dataSource()))
        .isInstanceOf(RelayException.class)
        .hasMessageContaining("outbox_probe_unique_payload");
    assertThat(recorded(db, 92)).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_index WHERE NOT indisvalid AND indexrelid = to_regclass('"
                    + db.schema()
                    + ".outbox_probe_unique_payload')"))
        .as("a failed concurrent build leaves an invalid index behind")
        .isEqualTo(1);

    db.execute("DELETE FROM {schema}.outbox WHERE work_id = 'twin-2'");
    assertThat(later.migrate(db.dataSource()).applied()).containsExactly(92);
    assertThat(indexValid(db, "outbox_probe_unique_payload")).isTrue();
  }

  @Test
  void aConcurrentFileThatHoldsMoreThanOneIndexIsRefusedBeforeAnythingRuns(TestDatabase db)
      throws Exception {
    Migrator later = laterRelease(db, "V91__after_probe", "V93__concurrently_two_statements");

    assertThatThrownBy(() -> later.migrate(db.dataSource()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("V93__concurrently_two_statements.sql")
        .hasMessageContaining("not exactly one CREATE [UNIQUE] INDEX CONCURRENTLY");
    assertThat(recorded(db, 91)).isZero();
    assertThat(db.queryString("SELECT to_regclass('{schema}.outbox_probe_a')::text")).isNull();
  }

  /**
   * Two migrators that both find no index both start its build. Each build first takes the table's
   * share-update-exclusive lock, which the other build's lock conflicts with; the one that gets it
   * later waits for every transaction older than its snapshot, the other build's among them, while
   * that build waits for its lock: the server cancels one of them with a deadlock. Here a session
   * holds that lock until both builds wait behind it, so both have looked at the index and found
   * none; the cancelled migrator looks again, waits for the other's build and applies nothing
   * twice.
   */
  @Test
  void twoMigratorsWhoseBuildsCollideBothFinish(TestDatabase db) throws Exception {
    Migrator later = laterRelease(db, "V94__concurrently_partial_probe");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Migrator.Report>> runs = new ArrayList<>();
      try (Connection holder = db.connection()) {
        holder.setAutoCommit(false);
        try (Statement s = holder.createStatement()) {
          s.execute("LOCK TABLE " + db.schema() + ".outbox IN SHARE UPDATE EXCLUSIVE MODE");
        }
        for (int i = 0; i < 2; i++) {
          runs.add(pool.submit(() -> later.migrate(db.dataSource())));
        }
        await()
            .atMost(Duration.ofMinutes(1))
            .until(
                () ->
                    db.queryLong(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                + " AND query LIKE '%CREATE INDEX CONCURRENTLY IF NOT EXISTS"
                                + " outbox_probe_failed_kind%'")
                        == 2);
        holder.commit();
      }
      List<Integer> applied = new ArrayList<>();
      for (Future<Migrator.Report> run : runs) {
        applied.addAll(run.get().applied());
      }
      assertThat(applied).containsExactly(94);
    } finally {
      pool.shutdownNow();
    }
    assertThat(recorded(db, 94)).isEqualTo(1);
    assertThat(indexValid(db, "outbox_probe_failed_kind")).isTrue();
  }

  @Test
  void migratorsRacingThroughAConcurrentBuildApplyEachVersionOnce(TestDatabase db)
      throws Exception {
    Migrator later = laterRelease(db, "V90__concurrently_probe_index", "V91__after_probe");
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Migrator.Report>> runs = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        runs.add(pool.submit(() -> later.migrate(db.dataSource())));
      }
      List<Integer> applied = new ArrayList<>();
      for (Future<Migrator.Report> run : runs) {
        applied.addAll(run.get().applied());
      }
      assertThat(applied).containsExactlyInAnyOrder(90, 91);
    } finally {
      pool.shutdownNow();
    }
    assertThat(recorded(db, 90)).isEqualTo(1);
    assertThat(indexValid(db, "outbox_probe_kind_created")).isTrue();
  }
}
