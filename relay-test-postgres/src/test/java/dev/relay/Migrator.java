package dev.relay;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * A stand-in for relay-core's migrator, on the kit's own test class path only: the kit finds it by
 * reflection as it finds the real one, so its tests cover preparing and resetting a migrated
 * schema.
 */
public final class Migrator {
  /** How often the kit has migrated a schema in this JVM. */
  public static final AtomicInteger CALLS = new AtomicInteger();

  private Migrator() {}

  /**
   * Creates a small Relay-like schema: a version table with one row, tables with an identity and a
   * foreign key, a free-standing sequence and a function.
   *
   * @param dataSource where to migrate
   * @param schema the existing, empty schema
   * @return the schema version, which the kit ignores
   * @throws SQLException if a statement fails
   */
  public static int migrate(DataSource dataSource, String schema) throws SQLException {
    String s = '"' + schema + '"';
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("CREATE TABLE " + s + ".schema_version (version int PRIMARY KEY)");
      statement.execute("INSERT INTO " + s + ".schema_version VALUES (1)");
      statement.execute(
          "CREATE TABLE "
              + s
              + ".jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
              + " payload jsonb NOT NULL)");
      statement.execute(
          "CREATE TABLE " + s + ".attempts (job_id bigint NOT NULL REFERENCES " + s + ".jobs)");
      statement.execute("CREATE SEQUENCE " + s + ".fence_tokens");
      statement.execute(
          "CREATE FUNCTION " + s + ".answer() RETURNS int LANGUAGE sql AS 'SELECT 42'");
    }
    CALLS.incrementAndGet();
    return 1;
  }
}
