package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class MigratorTest {
  private TestDatabase db;
  private String fresh;

  @BeforeEach
  void setUp(TestDatabase db) {
    this.db = db;
    this.fresh = db.schema() + "_m";
  }

  @AfterEach
  void dropFresh() throws Exception {
    db.execute("DROP SCHEMA IF EXISTS " + fresh + " CASCADE");
  }

  @Test
  void fourThreadsMigratingAtOnceApplyEachVersionOnce() throws Exception {
    assertThat(migrateConcurrently(4)).containsExactlyInAnyOrderElementsOf(allVersions());
    assertThat(db.queryLong("SELECT count(*) FROM " + fresh + ".schema_version"))
        .isEqualTo(allVersions().size());
    assertThat(recordedChecksums()).isEqualTo(shippedChecksums());
  }

  @Test
  void twoThreadsUpgradingAPreviousReleasesSchemaWithRowsWithoutChecksumsApplyAndFillOnce()
      throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    undoLatestVersion();
    db.execute(
        "UPDATE " + fresh + ".schema_version SET checksum = NULL WHERE version IN (1, 5, 11)");

    assertThat(migrateConcurrently(2)).containsExactly(Migrator.LATEST_VERSION);
    assertThat(recordedChecksums()).isEqualTo(shippedChecksums());
  }

  /** Runs {@code threads} migrations at once on the fresh schema; returns what they applied. */
  private List<Integer> migrateConcurrently(int threads) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Future<Migrator.Report>> reports = new ArrayList<>();
    try {
      for (int i = 0; i < threads; i++) {
        reports.add(
            pool.submit(
                () -> {
                  start.await(60, TimeUnit.SECONDS);
                  return Migrator.migrate(db.dataSource(), fresh);
                }));
      }
      List<Integer> applied = new ArrayList<>();
      for (Future<Migrator.Report> r : reports) {
        Migrator.Report report = r.get(2, TimeUnit.MINUTES);
        assertThat(report.currentVersion()).isEqualTo(Migrator.LATEST_VERSION);
        applied.addAll(report.applied());
      }
      return applied;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void freshMigrateRecordsTheChecksumOfEveryVersion() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);

    Map<Integer, String> recorded = recordedChecksums();
    assertThat(recorded.keySet()).containsExactlyElementsOf(allVersions());
    assertThat(recorded).isEqualTo(shippedChecksums());
    assertThat(recorded.values()).allSatisfy(c -> assertThat(c).matches("[0-9a-f]{64}"));
  }

  /**
   * The checksums of released versions, as databases have recorded them. A change here means a
   * shipped migration was edited, which every migrated database would then refuse: add a new
   * version instead. Append each new version once it is released.
   */
  private static final Map<Integer, String> RELEASED =
      Map.ofEntries(
          Map.entry(1, "881950bf2523112bf9f0d13d7cd02e388d02d0959f2a55124efe1181d69ccd8b"),
          Map.entry(2, "e3d369a26427300f72c31b6d8c4a2834e183d40ad4a524763de454c2c30e49b8"),
          Map.entry(3, "70b21558fe264a58104b429e2c9914726e097c3b342339bee141a3540469377f"),
          Map.entry(4, "865c73f94058f7ac3317d21e05b677cf14779d30e3025987518ad2b7b4354350"),
          Map.entry(5, "a0f509029fc023332599b7ea1997cdef4cbea6e44f858a20ba122b271c376784"),
          Map.entry(6, "e483e3c52cf7c14e10975ee342040395084022bcfc45c2e90cd6190a16072472"),
          Map.entry(7, "6eb7c3c686bc50badecfc377d2467773aaa44a33b804100f5147c3a1522b838c"),
          Map.entry(8, "d8937aa15e9ef4ba8a57aecb202fd0b753773c22b922caed8884fe36d722ead9"),
          Map.entry(9, "fdf504c16bf9eb8c5e6bb6aa7b4445ff9936c050f115e3f6e2facd7073dfb554"),
          Map.entry(10, "7254528ad3651473bb7e3eff5188d8da6b0d5bf14dc7e06ff484fd3b3924eaa8"),
          Map.entry(11, "7cdc144e5723c877397e022ef63fd16f1823da7b5f0efb372feaf76bff2f841c"),
          Map.entry(12, "090b8fbf7972083793c0ac15d66ec0389a4f93dc7cc903faa95936140f4dd691"),
          Map.entry(13, "37b12257c05fd770deb30976f28f580f35080268367f501a14d5b18a8ad8df11"),
          Map.entry(14, "fb329b4c2e6fb4adbb5fe86583f1e38fe04609e76b2be289aac71c02fe9325e8"),
          Map.entry(15, "995b976d201d05e6adb140743694d3677dada27933f4269ad5b3d4b87b232267"),
          Map.entry(16, "c6cfb8bdead378307243336e262fad4ad2f991595ed07189e7793d86df2d2a80"),
          Map.entry(17, "ed910bc5653976a53812e0e50796b89c7dd1db40fd426b2c08913bde7ecda36a"),
          Map.entry(18, "951d7a489fa9596a63e4c87e19902dc65dc54834eb93023caed7be7b3844f3db"),
          Map.entry(19, "b183fa9f414aa04b04846d1e07a6909030638bdf39d297e45439ccbca01b0484"),
          Map.entry(20, "7c6f27eef5712bef7a6fc9170e6f683b10e756fd6e78193ab57aeeb1800b65d4"),
          Map.entry(21, "fdd0f24e3efd81e338a51a2bc86bebc9aa6244ad8b29b9ab10b09e6a9d9ef181"),
          Map.entry(22, "cb894c0770d6039bc04529836a246e330248dd5c7a6f28f8d6bbcc840fceaaca"),
          Map.entry(23, "4781e513a85183a4bad99966947031bda86ef32efcf962847f82dd7d94cb7c9b"),
          Map.entry(24, "ef5a91fe2a12988c583e9b00d56c71c9de60d49fe78d0f386853929b371ac279"));

  @Test
  void releasedMigrationsAreNeverEdited() throws Exception {
    Map<Integer, String> shipped = shippedChecksums();
    for (Map.Entry<Integer, String> released : RELEASED.entrySet()) {
      assertThat(shipped.get(released.getKey()))
          .as("version %d was released; add a new version instead of editing it", released.getKey())
          .isEqualTo(released.getValue());
    }
  }

  @Test
  void anEditedMigrationIsRefusedNamingTheVersionAndBothChecksums() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    String shipped = shippedChecksums().get(3);
    String edited = "0".repeat(64);
    db.execute(
        "UPDATE " + fresh + ".schema_version SET checksum = '" + edited + "' WHERE version = 3");

    assertThatThrownBy(() -> Migrator.migrate(db.dataSource(), fresh))
        .isInstanceOfSatisfying(
            EditedMigrationException.class,
            e -> {
              assertThat(e.schema()).isEqualTo(fresh);
              assertThat(e.version()).isEqualTo(3);
              assertThat(e.recordedChecksum()).isEqualTo(edited);
              assertThat(e.shippedChecksum()).isEqualTo(shipped);
            })
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("version 3")
        .hasMessageContaining(edited)
        .hasMessageContaining(shipped);
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> Migrator.forSchema(fresh).currentVersion(c))
          .isInstanceOf(EditedMigrationException.class);
    }
    assertThat(recordedChecksums().get(3)).isEqualTo(edited);
  }

  @Test
  void aGapInTheAppliedVersionsIsRefusedNamingTheMissingVersion() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    db.execute("DELETE FROM " + fresh + ".schema_version WHERE version = 6");

    assertThatThrownBy(() -> Migrator.migrate(db.dataSource(), fresh))
        .isInstanceOfSatisfying(
            MigrationGapException.class,
            e -> {
              assertThat(e.schema()).isEqualTo(fresh);
              assertThat(e.missingVersions()).containsExactly(6);
            })
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("missing version 6");
    try (Connection c = db.connection()) {
      assertThatThrownBy(() -> Migrator.forSchema(fresh).currentVersion(c))
          .isInstanceOf(MigrationGapException.class);
    }
    assertThat(db.queryLong("SELECT count(*) FROM " + fresh + ".schema_version"))
        .isEqualTo(allVersions().size() - 1);
  }

  @Test
  void aGapIsRefusedBeforeAnyPendingVersionIsApplied() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    undoLatestVersion();
    db.execute("DELETE FROM " + fresh + ".schema_version WHERE version IN (2, 3)");

    assertThatThrownBy(() -> Migrator.migrate(db.dataSource(), fresh))
        .isInstanceOfSatisfying(
            MigrationGapException.class,
            e -> assertThat(e.missingVersions()).containsExactly(2, 3));
    assertThat(db.queryLong("SELECT max(version) FROM " + fresh + ".schema_version"))
        .isEqualTo(previousVersion());
  }

  @Test
  void aSchemaMigratedByThePreviousReleaseIsUpgradedAndItsChecksumsAccepted() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    undoLatestVersion();
    // The previous release's table: checksum NOT NULL.
    db.execute("ALTER TABLE " + fresh + ".schema_version ALTER COLUMN checksum SET NOT NULL");

    Migrator.Report report = Migrator.migrate(db.dataSource(), fresh);

    assertThat(report.previousVersion()).isEqualTo(previousVersion());
    assertThat(report.applied()).containsExactly(Migrator.LATEST_VERSION);
    assertThat(recordedChecksums()).isEqualTo(shippedChecksums());
    assertThat(
            db.queryString(
                "SELECT is_nullable FROM information_schema.columns WHERE table_schema = '"
                    + fresh
                    + "' AND table_name = 'schema_version' AND column_name = 'checksum'"))
        .isEqualTo("YES");
  }

  /**
   * Another session (an administrator's ALTER or GRANT) changes a catalog row the migration
   * replaces, and commits while the migration waits for it: PostgreSQL fails the migration's
   * statement with "tuple concurrently updated" (XX000), which CI met on PostgreSQL 15. The
   * migration rolls back and runs again instead of failing the application's start.
   */
  @Test
  void aCatalogRowAnotherSessionChangedMeanwhileIsMigratedAgainNotFailed() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    undoLatestVersion();
    ExecutorService one = Executors.newSingleThreadExecutor();
    try (Connection outsider = db.connection()) {
      outsider.setAutoCommit(false);
      long outsiderPid;
      try (Statement s = outsider.createStatement()) {
        s.execute("ALTER FUNCTION " + fresh + "." + LATEST_VERSION_REPLACES + " COST 101");
        try (ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
          rs.next();
          outsiderPid = rs.getLong(1);
        }
      }
      Future<Migrator.Report> run = one.submit(() -> Migrator.migrate(db.dataSource(), fresh));
      // the migration's CREATE OR REPLACE waits for the outsider's change of the function's row
      await()
          .atMost(Duration.ofMinutes(1))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_stat_activity WHERE "
                              + outsiderPid
                              + " = ANY (pg_blocking_pids(pid))")
                      > 0);
      outsider.commit();

      Migrator.Report report = run.get(2, TimeUnit.MINUTES);
      assertThat(report.applied()).containsExactly(Migrator.LATEST_VERSION);
      assertThat(report.previousVersion()).isEqualTo(previousVersion());
    } finally {
      one.shutdownNow();
    }
    assertThat(recordedChecksums()).isEqualTo(shippedChecksums());
  }

  @Test
  void versionsRecordedWithoutAChecksumAreFilledFromTheShippedTextAtTheNextMigrate()
      throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    undoLatestVersion();
    db.execute("UPDATE " + fresh + ".schema_version SET checksum = NULL");
    try (Connection c = db.connection()) {
      assertThat(Migrator.forSchema(fresh).currentVersion(c)).isEqualTo(previousVersion());
    }

    Migrator.Report report = Migrator.migrate(db.dataSource(), fresh);

    assertThat(report.applied()).containsExactly(Migrator.LATEST_VERSION);
    assertThat(recordedChecksums()).isEqualTo(shippedChecksums());
  }

  @Test
  void migratingACurrentSchemaChangesNothing() {
    Migrator.migrate(db.dataSource(), fresh);

    Migrator.Report again = Migrator.migrate(db.dataSource(), fresh);

    assertThat(again.applied()).isEmpty();
    assertThat(again.previousVersion()).isEqualTo(Migrator.LATEST_VERSION);
  }

  @Test
  void schemaMigratedByANewerLibraryIsRefused() throws Exception {
    Migrator.migrate(db.dataSource(), fresh);
    db.execute(
        "INSERT INTO "
            + fresh
            + ".schema_version (version, description, checksum) VALUES (999, 'future', 'x')");

    assertThatThrownBy(() -> Migrator.migrate(db.dataSource(), fresh))
        .isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("999");
    try (Connection c = db.connection()) {
      assertThat(Migrator.forSchema(fresh).currentVersion(c)).isEqualTo(999);
    }
  }

  @Test
  void aSchemaBuiltFromThePlainFilesAsFlywayWouldIsNotCheckedAndReadsVersionZero()
      throws Exception {
    for (String text : shippedTexts().values()) {
      db.execute(text.replace("${relay_schema}", fresh));
    }

    try (Connection c = db.connection()) {
      assertThat(Migrator.forSchema(fresh).currentVersion(c)).isZero();
    }
    assertThat(db.queryString("SELECT to_regclass('" + fresh + ".schema_version')::text")).isNull();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox outbox = Outbox.builder().schema(fresh).build();
      assertThat(outbox.enqueue(c, Work.of("flyway-1", "k", "{}")).inserted()).isTrue();
      c.commit();
    }
  }

  @Test
  void unmigratedSchemaReportsVersionZero() throws Exception {
    try (Connection c = db.connection()) {
      assertThat(Migrator.forSchema(fresh).currentVersion(c)).isZero();
    }
  }

  @Test
  void invalidSchemaNameIsRefusedBeforeTouchingTheDatabase() {
    assertThatThrownBy(() -> Migrator.forSchema("relay\"; DROP SCHEMA public; --"))
        .isInstanceOfSatisfying(
            InvalidConfigurationException.class, e -> assertThat(e.setting()).isEqualTo("schema"))
        .hasMessageContaining("plain identifier");
    assertThatThrownBy(() -> Migrator.forSchema(""))
        .isInstanceOf(InvalidConfigurationException.class);
  }

  /** A catalog object the latest version replaces: what {@link #undoLatestVersion} restores. */
  private static final String LATEST_VERSION_REPLACES = "lock_dependencies(text[])";

  /** Takes the schema back to the version before the latest, as the previous release left it. */
  private void undoLatestVersion() throws Exception {
    assertThat(Migrator.LATEST_VERSION).as("update this for the new latest version").isEqualTo(28);
    // what version 28 changed: lock_dependencies locked live dependencies too (version 25's)
    db.execute(
        ("""
            CREATE OR REPLACE FUNCTION %1$s.lock_dependencies(ids text[]) RETURNS SETOF text
                LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
                SET search_path = pg_catalog, pg_temp
            AS $$
                WITH present AS (
                    SELECT o.work_id FROM %1$s.outbox o WHERE o.work_id = ANY (ids)
                     ORDER BY o.work_id FOR KEY SHARE
                ), finished AS (
                    SELECT h.work_id FROM %1$s.work_history h WHERE h.work_id = ANY (ids)
                     ORDER BY h.work_id FOR KEY SHARE
                ), kept AS (
                    SELECT t.work_id FROM %1$s.tombstone t WHERE t.work_id = ANY (ids)
                     ORDER BY t.work_id FOR KEY SHARE
                )
                SELECT work_id FROM present UNION SELECT work_id FROM finished
                UNION SELECT work_id FROM kept
            $$;
            DELETE FROM %1$s.schema_version WHERE version = %2$d""")
            .formatted(fresh, Migrator.LATEST_VERSION));
  }

  private Map<Integer, String> recordedChecksums() throws Exception {
    Map<Integer, String> recorded = new LinkedHashMap<>();
    try (Connection c = db.connection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT version, checksum FROM " + fresh + ".schema_version ORDER BY version")) {
      while (rs.next()) {
        recorded.put(rs.getInt(1), rs.getString(2));
      }
    }
    return recorded;
  }

  /**
   * SHA-256 of each shipped resource's text with line endings normalised, computed here anew from
   * the migrations folder.
   */
  private static Map<Integer, String> shippedChecksums() throws Exception {
    Map<Integer, String> shipped = new TreeMap<>();
    for (Map.Entry<Integer, String> file : shippedTexts().entrySet()) {
      shipped.put(
          file.getKey(),
          HexFormat.of()
              .formatHex(
                  MessageDigest.getInstance("SHA-256")
                      .digest(file.getValue().getBytes(StandardCharsets.UTF_8))));
    }
    return shipped;
  }

  /** Each shipped resource's text (V{n}__{description}.sql) by version, line endings LF. */
  private static Map<Integer, String> shippedTexts() throws Exception {
    Path folder = Path.of(Migrator.class.getResource("migrations").toURI());
    Map<Integer, String> shipped = new TreeMap<>();
    try (Stream<Path> files = Files.list(folder)) {
      for (Path f : files.toList()) {
        Matcher m = Pattern.compile("V(\\d+)__.*\\.sql").matcher(f.getFileName().toString());
        assertThat(m.matches()).as(f.toString()).isTrue();
        shipped.put(
            Integer.parseInt(m.group(1)),
            Files.readString(f, StandardCharsets.UTF_8).replace("\r\n", "\n"));
      }
    }
    return shipped;
  }

  /** The versions shipped, in order (numbers a branch took and never released are skipped). */
  private static List<Integer> allVersions() throws Exception {
    return new ArrayList<>(shippedTexts().keySet());
  }

  /** The version shipped before the latest. */
  private static int previousVersion() throws Exception {
    List<Integer> all = allVersions();
    return all.get(all.size() - 2);
  }
}
