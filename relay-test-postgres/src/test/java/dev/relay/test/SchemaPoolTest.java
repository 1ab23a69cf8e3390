package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.relay.Migrator;
import java.sql.SQLException;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.parallel.Isolated;

class SchemaPoolTest {

  /** Two tests running at once, as the extension serves them, each with a schema. */
  @Test
  void concurrentTestsGetDifferentSchemasThatDoNotSeeEachOther() throws SQLException {
    Server server = Server.get(false);
    TestDatabase first = new TestDatabase(server, server.schemas().acquire(), false);
    TestDatabase second = new TestDatabase(server, server.schemas().acquire(), false);
    try {
      assertThat(first.schema()).isNotEqualTo(second.schema());
      first.execute("CREATE TABLE {schema}.only_first (id int)");
      second.execute("CREATE TABLE {schema}.only_second (id int)");
      first.execute("INSERT INTO {schema}.jobs (payload) VALUES ('{}')");

      assertThat(tableCount(first, "only_first")).isEqualTo(1);
      assertThat(tableCount(first, "only_second")).isZero();
      assertThat(tableCount(second, "only_second")).isEqualTo(1);
      assertThat(tableCount(second, "only_first")).isZero();
      assertThat(first.queryLong("SELECT count(*) FROM {schema}.jobs")).isEqualTo(1);
      assertThat(second.queryLong("SELECT count(*) FROM {schema}.jobs")).isZero();
    } finally {
      first.release();
      second.release();
    }
  }

  private static long tableCount(TestDatabase db, String table) throws SQLException {
    return db.queryLong(
        "SELECT count(*) FROM pg_tables WHERE schemaname = '"
            + db.schema()
            + "' AND tablename = '"
            + table
            + "'");
  }

  /**
   * Tests that run one after another reuse one schema. The order of these tests matters, and no
   * other test may take the schema in between.
   */
  @Nested
  @Isolated
  @RelayDatabaseTest
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  class Reuse {
    private static String usedSchema;
    private static int migrationsAfterFirstTest;

    @Test
    @Order(1)
    void aTestCreatesObjectsAndRows(TestDatabase db) throws SQLException {
      usedSchema = db.schema();
      db.execute(
          """
          CREATE TABLE {schema}.scratch (id serial PRIMARY KEY, note text);
          CREATE VIEW {schema}.scratch_view AS SELECT * FROM {schema}.scratch;
          CREATE SEQUENCE {schema}.scratch_seq;
          CREATE TYPE {schema}.mood AS ENUM ('ok', 'not_ok');
          CREATE FUNCTION {schema}.scratch_fn(a int) RETURNS int LANGUAGE sql AS 'SELECT a';
          INSERT INTO {schema}.jobs (payload) VALUES ('{}'), ('{}');
          INSERT INTO {schema}.attempts VALUES (1);
          SELECT nextval('{schema}.fence_tokens');
          """);
      migrationsAfterFirstTest = Migrator.CALLS.get();
    }

    @Test
    @Order(2)
    void theNextTestGetsTheSameSchemaReset(TestDatabase db) throws SQLException {
      assumeThat(usedSchema).as("runs after test 1").isNotNull();
      assertThat(db.schema()).isEqualTo(usedSchema);
      assertThat(Migrator.CALLS.get()).as("not migrated again").isEqualTo(migrationsAfterFirstTest);

      String inSchema = " WHERE n.nspname = '" + db.schema() + "'";
      assertThat(
              db.queryString(
                  "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c"
                      + " JOIN pg_namespace n ON n.oid = c.relnamespace"
                      + inSchema
                      + " AND c.relkind IN ('r', 'v', 'S')"))
          .isEqualTo("attempts,fence_tokens,jobs,jobs_id_seq,schema_version");
      assertThat(
              db.queryString(
                  "SELECT string_agg(p.proname, ',') FROM pg_proc p"
                      + " JOIN pg_namespace n ON n.oid = p.pronamespace"
                      + inSchema))
          .isEqualTo("answer");
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
                      + inSchema
                      + " AND t.typname = 'mood'"))
          .isZero();

      assertThat(db.queryLong("SELECT count(*) FROM {schema}.attempts")).isZero();
      assertThat(db.queryLong("INSERT INTO {schema}.jobs (payload) VALUES ('{}') RETURNING id"))
          .as("identity restarted")
          .isEqualTo(1);
      assertThat(db.queryLong("SELECT nextval('{schema}.fence_tokens')")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.schema_version"))
          .as("schema_version kept")
          .isEqualTo(1);
    }

    @Test
    @Order(3)
    void aTestChangesAPreparedTable(TestDatabase db) throws SQLException {
      usedSchema = db.schema();
      db.execute("ALTER TABLE {schema}.jobs ADD COLUMN extra int");
    }

    @Test
    @Order(4)
    void theNextTestGetsAFreshSchemaAndTheChangedOneIsDropped(TestDatabase db) throws SQLException {
      assumeThat(usedSchema).as("runs after test 3").isNotNull();
      assertThat(db.schema()).isNotEqualTo(usedSchema);
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM information_schema.columns WHERE table_schema = '"
                      + db.schema()
                      + "' AND table_name = 'jobs' AND column_name = 'extra'"))
          .isZero();
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_namespace WHERE nspname = '" + usedSchema + "'"))
          .isZero();
    }
  }
}
