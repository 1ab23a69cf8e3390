package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.store.GrantCatalog.Role;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A work row's dependency rows leave with it (schema version 26: one trigger per deleting
 * statement, where version 10's foreign key ran a query per deleted row): when it finishes and
 * moves to the history table, when a worker role that may not touch the dependency table finishes
 * it, and when any DELETE removes it; the rows of work still waiting stay.
 */
@RelayDatabaseTest
class DependencyRowsLeaveTest {
  private static final String KIND = "step";
  private static final Duration LEASE = Duration.ofMinutes(1);

  private TestDatabase db;
  private ManualClaims claims;
  private List<String> roles = List.of();

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    this.claims = ManualClaims.forSchema(db.schema());
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(
          c,
          List.of(
              Work.of("order-103", KIND, "{}"),
              Work.of("order-103-ack", KIND, "{}").dependsOn("order-103"),
              Work.of("order-103-invoice", KIND, "{}").dependsOn("order-103"),
              Work.of("order-104", KIND, "{}")));
      c.commit();
    }
  }

  @AfterEach
  void dropRoles() throws SQLException {
    for (String role : roles) {
      db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
    }
  }

  @Test
  void finishedWorkTakesItsDependencyRowsWithItEvenForARoleWithoutAccessToThem() throws Exception {
    roles = Migrator.forSchema(db.schema()).grantRoles(db.dataSource());
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute("SET ROLE " + Role.WORKER.of(SchemaName.of(db.schema())));
      try {
        // first the work nothing holds, then the two waiting for order-103; only the ack finishes
        assertThat(settleDone(c, "order-103", "order-104")).isEmpty();
        assertThat(settleDone(c, "order-103-ack")).containsExactly("order-103-invoice");
      } finally {
        s.execute(
            "RESET ROLE"); // a failed assertion must not hand a pooled connection on as the role
      }
    }

    assertThat(db.queryString("SELECT state FROM {schema}.work WHERE work_id = 'order-103-ack'"))
        .isEqualTo("done");
    assertThat(
            db.queryString(
                "SELECT string_agg(work_id || '>' || depends_on, ',') FROM {schema}.dependency"))
        .isEqualTo("order-103-invoice>order-103");
  }

  @Test
  void anyDeleteTakesTheDependencyRowsOfTheRowsItDeletesAndNoOthers() throws Exception {
    db.execute(
        "DELETE FROM {schema}.outbox WHERE work_id IN ('order-103-ack', 'order-104', 'order-103')");

    assertThat(
            db.queryString(
                "SELECT string_agg(work_id || '>' || depends_on, ',') FROM {schema}.dependency"))
        .isEqualTo("order-103-invoice>order-103");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = '"
                    + db.schema()
                    + ".dependency'::regclass AND contype = 'f'"))
        .as("no per-row foreign-key trigger")
        .isZero();
  }

  /** Claims what is claimable, finishes {@code done} of it; returns the rest, still running. */
  private List<String> settleDone(Connection c, String... done) {
    List<String> running = new ArrayList<>();
    for (HeldClaim held :
        claims.claim(c, "worker-1", List.of("default"), List.of(KIND), 10, LEASE).claimed()) {
      if (List.of(done).contains(held.workId())) {
        assertThat(claims.settle(c, held, Outcome.done("ref-" + held.workId())).applied()).isTrue();
      } else {
        running.add(held.workId());
      }
    }
    return running;
  }
}
