package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Migrator;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code relay migrate --roles} from the user's side: it migrates and grants the schema's roles
 * (twice: a re-run is safe), {@code --print-sql} prints the catalog's script without a database,
 * and {@code relay enqueue} runs as a LOGIN user that is only a member of the producer role.
 */
@RelayDatabaseTest
class MigrateRolesCommandTest {
  private TestDatabase db;

  @AfterEach
  void dropRoles() throws SQLException {
    if (db == null) {
      return;
    }
    for (String role :
        List.of(
            db.schema() + "_shop_app",
            db.schema() + "_shop_worker",
            db.schema() + "_producer",
            db.schema() + "_worker",
            db.schema() + "_scheduler",
            db.schema() + "_operator")) {
      db.execute(
          "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"
              + role
              + "') THEN EXECUTE 'DROP OWNED BY "
              + role
              + "'; EXECUTE 'DROP ROLE "
              + role
              + "'; END IF; END $$");
    }
  }

  @Test
  void printSqlPrintsTheCatalogsScriptWithoutADatabase() {
    Cli.Result r = Cli.run("migrate", "--roles", "--print-sql", "--schema", "shop");
    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).isEqualTo(Migrator.forSchema("shop").rolesSql());
    Cli.Result alone = Cli.run("migrate", "--print-sql", "--schema", "shop");
    assertThat(alone.exitCode()).as(alone.toString()).isEqualTo(2);
    assertThat(alone.err()).contains("--print-sql", "--roles");
  }

  @Test
  void migrateRolesGrantsAndTheProducerEnqueuesFromTheCli(TestDatabase db) throws Exception {
    this.db = db;
    for (int run = 0; run < 2; run++) {
      Cli.Result r = Cli.run(CommandLineTest.on(db, "migrate", "--roles"));
      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out())
          .contains(
              "roles "
                  + db.schema()
                  + "_producer, "
                  + db.schema()
                  + "_worker, "
                  + db.schema()
                  + "_scheduler, "
                  + db.schema()
                  + "_operator granted");
    }
    String user = db.schema() + "_shop_app";
    db.execute(
        "CREATE ROLE " + user + " LOGIN PASSWORD 'shop' IN ROLE " + db.schema() + "_producer");
    String url = db.jdbcUrl().replaceFirst("user=[^&]*", "user=" + user + "&password=shop");
    Cli.Result enqueued =
        Cli.run(
            "enqueue",
            "--id",
            "order-103-ack",
            "--kind",
            "order_received",
            "--payload",
            "{\"order\": 103}",
            "--jdbc-url",
            url,
            "--schema",
            db.schema());
    assertThat(enqueued.exitCode()).as(enqueued.toString()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
    // The producer may not run the operator's commands.
    Cli.Result cancel =
        Cli.run(
            "cancel",
            "order-103-ack",
            "--actor",
            "olga",
            "--reason",
            "test",
            "--jdbc-url",
            url,
            "--schema",
            db.schema());
    assertThat(cancel.exitCode()).as(cancel.toString()).isNotZero();
    assertThat(cancel.err())
        .contains("permission denied")
        .contains(
            "relay cancel needs the operator role: log in as a user in "
                + db.schema()
                + "_operator");
  }

  /**
   * A worker-only user running an operator's command was told {@code read catch-up windows failed:
   * ERROR: permission denied for table schedule_state} and no more. Each refusal (SQLState 42501)
   * names the role the command needs, with its name for the schema, as serve's metrics warning
   * does; still one line, exit 1.
   */
  @Test
  void aPermissionRefusalNamesTheRoleTheCommandNeeds(TestDatabase db) throws Exception {
    this.db = db;
    Cli.Result migrated = Cli.run(CommandLineTest.on(db, "migrate", "--roles"));
    assertThat(migrated.exitCode()).as(migrated.toString()).isZero();
    String user = db.schema() + "_shop_worker";
    db.execute("CREATE ROLE " + user + " LOGIN PASSWORD 'shop' IN ROLE " + db.schema() + "_worker");
    String url = db.jdbcUrl().replaceFirst("user=[^&]*", "user=" + user + "&password=shop");
    String operator =
        "needs the operator role: log in as a user in "
            + db.schema()
            + "_operator (relay migrate --roles creates the roles; docs/operations.md, section"
            + " 18)";
    for (List<String> command : List.of(List.of("purge", "--dry-run"), List.of("status"))) {
      Cli.Result r = Cli.run(withUrl(command, url, db.schema()));
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err().lines().toList())
          .as(r.toString())
          .singleElement()
          .satisfies(
              line ->
                  assertThat(line)
                      .startsWith("relay " + command.get(0) + ": ")
                      .contains("permission denied")
                      .endsWith("; relay " + command.get(0) + " " + operator));
    }
    Cli.Result enqueue =
        Cli.run(
            withUrl(
                List.of("enqueue", "--id", "a", "--kind", "k", "--payload", "{}"),
                url,
                db.schema()));
    assertThat(enqueue.exitCode()).as(enqueue.toString()).isEqualTo(1);
    assertThat(enqueue.err())
        .contains("permission denied")
        .contains(
            "; relay enqueue needs the producer role: log in as a user in "
                + db.schema()
                + "_producer (");
  }

  private static String[] withUrl(List<String> command, String url, String schema) {
    List<String> all = new java.util.ArrayList<>(command);
    all.addAll(List.of("--jdbc-url", url, "--schema", schema));
    return all.toArray(String[]::new);
  }
}
