package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

@RelayDatabaseTest
class RelayDatabaseExtensionTest {
  private TestDatabase fromBeforeEach;

  @BeforeEach
  void rememberDatabase(TestDatabase db) {
    fromBeforeEach = db;
  }

  @Test
  void beforeEachAndTestGetTheSameInstance(TestDatabase db) {
    assertThat(db).isSameAs(fromBeforeEach);
  }

  @Test
  void schemaIsNamedPerJvmAndExists(TestDatabase db) throws SQLException {
    assertThat(db.schema()).matches("relay_t[a-z0-9]{6}_[0-9]+");
    assertThat(
            db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = '" + db.schema() + "'"))
        .isEqualTo(1);
  }

  @Test
  void migratorPreparedTheSchema(TestDatabase db) throws SQLException {
    assertThat(db.queryLong("SELECT max(version) FROM {schema}.schema_version")).isEqualTo(1);
    assertThat(db.queryLong("SELECT {schema}.answer()")).isEqualTo(42);
  }

  @Test
  void everyConnectionUsesANonUtcSessionTimeZone(TestDatabase db) throws SQLException {
    assertThat(db.queryString("SHOW TimeZone")).isEqualTo("America/St_Johns");
    assertThat(timeZone(db.dataSource())).isEqualTo("America/St_Johns");
    try (HikariDataSource extra = db.newDataSource("extra", 2)) {
      assertThat(timeZone(extra)).isEqualTo("America/St_Johns");
    }
  }

  @Test
  void connectionIsInAutocommitModeWithoutSearchPath(TestDatabase db) throws SQLException {
    try (Connection connection = db.connection()) {
      assertThat(connection.getAutoCommit()).isTrue();
    }
    assertThat(db.queryString("SHOW search_path")).doesNotContain(db.schema());
  }

  @Test
  void connectionFactsDescribeTheServer(TestDatabase db) throws SQLException {
    assertThat(db.jdbcUrl())
        .startsWith("jdbc:postgresql://")
        .contains(":" + db.port() + "/" + db.database())
        .doesNotContain(db.schema());
    try (Connection connection = DriverManager.getConnection(db.jdbcUrl());
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("SELECT current_database(), current_user")) {
      rows.next();
      assertThat(rows.getString(1)).isEqualTo(db.database());
      assertThat(rows.getString(2)).isEqualTo(db.user());
    }
    assertThat(db.serverVersionNum()).isGreaterThanOrEqualTo(150000);
    if (!ExternalServer.configured()) {
      assertThat(db.host()).isEqualTo("127.0.0.1");
      assertThat(db.serverVersionNum()).isBetween(180000, 189999);
    }
    assertThat(db.durable()).isFalse();
  }

  @Test
  void helpersReplaceTheSchemaPlaceholder(TestDatabase db) throws SQLException {
    db.execute("CREATE TABLE {schema}.t (v text); INSERT INTO {schema}.t VALUES ('a'), (NULL)");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.t")).isEqualTo(2);
    assertThat(db.queryString("SELECT v FROM {schema}.t WHERE v IS NULL")).isNull();
    assertThatThrownBy(() -> db.queryLong("SELECT 1 FROM {schema}.t WHERE false"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no row");
  }

  @Nested
  class InANestedClass {
    @Test
    void testsGetTheDatabaseToo(TestDatabase db) throws SQLException {
      assertThat(db).isSameAs(fromBeforeEach);
      db.execute("CREATE TABLE {schema}.nested (id int)");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.nested")).isZero();
    }
  }

  @Nested
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  class ExtraPools {
    private static HikariDataSource leftOpen;

    @Test
    @Order(1)
    void aTestLeavesAnExtraPoolOpen(TestDatabase db) throws SQLException {
      leftOpen = db.newDataSource("left-open", 1);
      try (Connection connection = leftOpen.getConnection()) {
        assertThat(connection.isValid(10)).isTrue();
      }
    }

    @Test
    @Order(2)
    void theKitClosedItAtTestEnd() {
      assertThat(leftOpen).isNotNull();
      assertThat(leftOpen.isClosed()).isTrue();
    }
  }

  private static String timeZone(DataSource dataSource) throws SQLException {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("SHOW TimeZone")) {
      rows.next();
      return rows.getString(1);
    }
  }
}
