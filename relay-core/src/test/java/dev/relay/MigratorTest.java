package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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
    ExecutorService pool = Executors.newFixedThreadPool(4);
    CyclicBarrier start = new CyclicBarrier(4);
    List<Future<Migrator.Report>> reports = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
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
      assertThat(applied).containsExactlyInAnyOrderElementsOf(allVersions());
    } finally {
      pool.shutdownNow();
    }
    assertThat(db.queryLong("SELECT count(*) FROM " + fresh + ".schema_version"))
        .isEqualTo(allVersions().size());
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

  private static List<Integer> allVersions() {
    List<Integer> all = new ArrayList<>();
    for (int v = 1; v <= Migrator.LATEST_VERSION; v++) {
      all.add(v);
    }
    return all;
  }
}
