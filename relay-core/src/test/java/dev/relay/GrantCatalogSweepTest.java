package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.store.GrantCatalog;
import dev.relay.internal.store.GrantCatalog.Role;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each role may do exactly what the catalog says, on every table, column and function: for each
 * role, each table and each of its columns, a SELECT, an INSERT and an UPDATE (to its default:
 * identity columns allow no other) of that one column, and a DELETE and a TRUNCATE of the table
 * (all matching no row, so nothing changes) either run or are refused with SQLSTATE 42501, as the
 * catalog's grants predict; and so do calls of the functions that are not PUBLIC. The role tests of
 * relay-docs ({@code RoleGrantsTest}) show that these grants are enough for each role's job; this
 * shows that nothing beyond them is held.
 */
@RelayDatabaseTest
class GrantCatalogSweepTest {
  /** The catalog's views (not updatable), swept for reads only. */
  private static final Set<String> VIEWS = Set.of("work");

  private TestDatabase db;
  private List<String> roles;

  @BeforeEach
  void grant(TestDatabase db) {
    this.db = db;
    roles = Migrator.forSchema(db.schema()).grantRoles(db.dataSource());
  }

  @AfterEach
  void dropRoles() throws SQLException {
    for (String role : roles) {
      db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
    }
  }

  @Test
  void everyRoleHoldsExactlyTheCatalogsPrivileges() throws SQLException {
    SchemaName schema = SchemaName.of(db.schema());
    List<String> wrong = new ArrayList<>();
    int checked = 0;
    for (Role role : Role.values()) {
      Set<Role> effective =
          role == Role.SCHEDULER ? EnumSet.of(Role.SCHEDULER, Role.PRODUCER) : EnumSet.of(role);
      try (Connection c = db.connection();
          Statement s = c.createStatement()) {
        s.execute("SET ROLE " + role.of(schema));
        try {
          for (GrantCatalog.Table t : GrantCatalog.tables()) {
            String table = schema.sql() + "." + t.name();
            if (VIEWS.contains(t.name())) {
              // a view of a UNION is read-only whatever the grants: only reads are swept, and
              // the catalog must grant nothing else on it
              assertThat(t.grants()).allMatch(g -> g.privilege().equals("SELECT"));
              for (String column : t.columns()) {
                checked++;
                check(
                    s,
                    "SELECT " + column + " FROM " + table + " WHERE false",
                    allowed(effective, t, "SELECT", column),
                    wrong,
                    role);
              }
              continue;
            }
            for (String column : t.columns()) {
              for (String privilege : List.of("SELECT", "INSERT", "UPDATE")) {
                String sql =
                    switch (privilege) {
                      case "SELECT" -> "SELECT " + column + " FROM " + table + " WHERE false";
                      case "INSERT" ->
                          "INSERT INTO "
                              + table
                              + " ("
                              + column
                              + ") OVERRIDING SYSTEM VALUE SELECT NULL WHERE false";
                      default -> "UPDATE " + table + " SET " + column + " = DEFAULT WHERE false";
                    };
                checked++;
                check(s, sql, allowed(effective, t, privilege, column), wrong, role);
              }
            }
            checked += 2;
            check(
                s,
                "DELETE FROM " + table + " WHERE false",
                allowed(effective, t, "DELETE", null),
                wrong,
                role);
            check(s, "TRUNCATE " + table, false, wrong, role);
          }
          for (GrantCatalog.Function f : GrantCatalog.functions()) {
            String name = f.signature().substring(0, f.signature().indexOf('('));
            String call =
                switch (name) {
                  case "enqueue" -> "enqueue(NULL, NULL, NULL)";
                  case "lock_dependencies" -> "lock_dependencies(NULL)";
                  case "handoff_lease" -> "handoff_lease(NULL, NULL, NULL)";
                  // not NULL: a STRICT function of constant NULLs is folded to NULL by the
                  // planner, before the EXECUTE check (WHERE false keeps it from running)
                  case "add_history_day" -> "add_history_day(current_date)";
                  case "retire_history_day" -> "retire_history_day(current_date, now())";
                  case "reopen_history" -> "reopen_history(ARRAY['none'])";
                  default -> null; // PUBLIC, or a trigger's
                };
            if (call != null) {
              checked++;
              boolean granted = f.execute().stream().anyMatch(effective::contains);
              check(
                  s, "SELECT " + schema.sql() + "." + call + " WHERE false", granted, wrong, role);
            }
          }
        } finally {
          s.execute("RESET ROLE");
        }
      }
    }
    assertThat(wrong).as("statements whose outcome the catalog does not predict").isEmpty();
    assertThat(checked).as("statements tried").isGreaterThan(2000);
  }

  @Test
  void aUserWhoMayNotCreateTheRolesIsToldHowAndNothingChanges() throws SQLException {
    SchemaName schema = SchemaName.of(db.schema());
    db.execute(
        "DROP OWNED BY " + Role.OPERATOR.of(schema) + "; DROP ROLE " + Role.OPERATOR.of(schema));
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute("SET ROLE " + Role.WORKER.of(schema));
      try {
        assertThatThrownBy(() -> Migrator.forSchema(schema.sql()).grantRoles(c))
            .isInstanceOfSatisfying(
                RelayException.class, e -> assertThat(e.sqlState()).isEqualTo("42501"))
            .hasMessageContaining("CREATEROLE")
            .hasMessageContaining("relay migrate --roles --print-sql")
            .hasMessageContaining("nothing was changed");
        assertThat(c.getAutoCommit()).isTrue();
      } finally {
        s.execute("RESET ROLE");
      }
    }
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_roles WHERE rolname = '" + Role.OPERATOR.of(schema) + "'"))
        .isZero();
    assertThat(
            db.queryString(
                "SELECT has_table_privilege('"
                    + Role.WORKER.of(schema)
                    + "', '"
                    + schema.sql()
                    + ".kind', 'INSERT')::text"))
        .as("the worker's grants were not revoked")
        .isEqualTo("true");
    roles = roles.subList(0, 3); // the operator is gone already
  }

  private static boolean allowed(
      Set<Role> effective, GrantCatalog.Table t, String privilege, String column) {
    return t.grants().stream()
        .anyMatch(
            g ->
                effective.contains(g.role())
                    && g.privilege().equals(privilege)
                    && (g.columns().isEmpty() || g.columns().contains(column)));
  }

  private static void check(
      Statement s, String sql, boolean allowed, List<String> wrong, Role role) {
    try {
      s.execute(sql);
      if (!allowed) {
        wrong.add(role + " may, but the catalog does not grant it: " + sql);
      }
    } catch (SQLException e) {
      if (allowed || !"42501".equals(e.getSQLState())) {
        wrong.add(role + " " + e.getSQLState() + " " + e.getMessage() + ": " + sql);
      }
    }
  }
}
