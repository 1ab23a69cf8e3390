package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.internal.store.GrantCatalog;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The grant catalog names every table, every column and every function of a migrated schema, as
 * PostgreSQL lists them, and nothing else: a migration that adds a table, a column or a function
 * fails here until its grants are decided in {@link GrantCatalog} (and docs/protocol.md's block is
 * regenerated, see RoleGrantsTest in relay-docs).
 */
@RelayDatabaseTest
class GrantCatalogCoverageTest {
  /** What to do after deciding the grants. */
  private static final String THEN =
      " (then regenerate docs/protocol.md's roles block: ./mvnw -pl relay-docs test"
          + " -Dtest=RoleGrantsTest -Drelay.docs.update=true)";

  @Test
  void theCatalogNamesEveryTableAndColumnOfTheSchema(TestDatabase db) throws SQLException {
    Map<String, List<String>> actual = new TreeMap<>();
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                """
                SELECT cl.relname, a.attname
                  FROM pg_class cl
                  JOIN pg_namespace n ON n.oid = cl.relnamespace
                  JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum > 0
                                     AND NOT a.attisdropped
                 WHERE n.nspname = ? AND cl.relkind IN ('r', 'p', 'v', 'm', 'f')
                   -- a partition is read and written through its parent, whose grants apply
                   AND NOT cl.relispartition
                 ORDER BY cl.relname, a.attnum""")) {
      ps.setString(1, db.schema());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          actual.computeIfAbsent(rs.getString(1), t -> new ArrayList<>()).add(rs.getString(2));
        }
      }
    }
    Map<String, List<String>> cataloged = new TreeMap<>();
    for (GrantCatalog.Table t : GrantCatalog.tables()) {
      cataloged.put(t.name(), t.columns());
    }
    assertThat(cataloged.keySet())
        .as("tables of the migrated schema: each needs its grants decided in GrantCatalog" + THEN)
        .containsExactlyElementsOf(actual.keySet());
    actual.forEach(
        (table, columns) ->
            assertThat(new TreeSet<>(cataloged.get(table)))
                .as("columns of %s: each needs its grants decided in GrantCatalog" + THEN, table)
                .containsExactlyElementsOf(new TreeSet<>(columns)));
  }

  @Test
  void theCatalogNamesEveryFunctionOfTheSchema(TestDatabase db) throws SQLException {
    TreeSet<String> actual = new TreeSet<>();
    TreeSet<String> cataloged = new TreeSet<>();
    try (Connection c = db.connection()) {
      try (PreparedStatement ps =
          c.prepareStatement(
              """
              SELECT p.oid::regprocedure::text FROM pg_proc p
                JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = ?""")) {
        ps.setString(1, db.schema());
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            actual.add(rs.getString(1));
          }
        }
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT to_regprocedure(?)::text")) {
        for (GrantCatalog.Function f : GrantCatalog.functions()) {
          ps.setString(1, db.schema() + "." + f.signature());
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            assertThat(rs.getString(1))
                .as("GrantCatalog names %s, which the schema does not have", f.signature())
                .isNotNull();
            cataloged.add(rs.getString(1));
          }
        }
      }
    }
    assertThat(cataloged)
        .as(
            "functions of the migrated schema: each needs its grants decided in GrantCatalog"
                + THEN)
        .containsExactlyElementsOf(actual);
  }

  @Test
  void noRoleMayUpdateAWorkItemsIdentity() {
    String script = Migrator.forSchema("relay").rolesSql();
    assertThat(script).doesNotContain("GRANT ALL", "UPDATE ON relay.outbox");
    List<String> outboxUpdates = new ArrayList<>();
    for (String statement : script.split(";\n")) {
      int at = statement.indexOf("UPDATE (");
      if (statement.contains(" ON relay.outbox TO ") && at >= 0) {
        outboxUpdates.add(statement.substring(at, statement.indexOf(')', at)).replace("\n", " "));
      }
    }
    assertThat(outboxUpdates).as("the worker's and the operator's updates").hasSize(2);
    assertThat(outboxUpdates)
        .allSatisfy(
            u -> assertThat(u.split("[(),\\s]+")).doesNotContain("work_id", "kind", "payload"));
  }

  @Test
  void aSchemaTooLongToNameRolesAfterIsRefused() {
    String name = "s".repeat(60);
    assertThatThrownBy(() -> Migrator.forSchema(name).rolesSql())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("at most 53 characters");
  }
}
