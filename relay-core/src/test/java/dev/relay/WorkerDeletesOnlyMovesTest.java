package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.store.GrantCatalog.Role;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker role deletes work only by filing it as finished (schema version 27): its settle's move
 * to the history table passes, a DELETE of its own is refused and changes nothing, and the
 * operator's deletes (purge, cancel) are not its business.
 */
@RelayDatabaseTest
class WorkerDeletesOnlyMovesTest {
  private static final String KIND = "ack";
  private static final Duration LEASE = Duration.ofMinutes(1);

  private TestDatabase db;
  private List<String> roles = List.of();

  @BeforeEach
  void setUp(TestDatabase db) throws Exception {
    this.db = db;
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(
          c,
          List.of(
              Work.of("order-103-ack", KIND, "{}"),
              Work.of("order-104-ack", KIND, "{}"),
              Work.of("order-105-ack", KIND, "{}")));
      c.commit();
    }
    roles = Migrator.forSchema(db.schema()).grantRoles(db.dataSource());
  }

  @AfterEach
  void dropRoles() throws SQLException {
    for (String role : roles) {
      db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
    }
  }

  @Test
  void aWorkersOwnDeleteIsRefusedAndItsSettleStillMovesTheRow() throws Exception {
    ManualClaims claims = ManualClaims.forSchema(db.schema());
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute("SET ROLE " + Role.WORKER.of(SchemaName.of(db.schema())));
      try {
        // ready work, and running work of its own: neither may simply vanish
        assertThatThrownBy(
                () ->
                    s.executeUpdate(
                        "DELETE FROM " + db.schema() + ".outbox WHERE work_id = 'order-104-ack'"))
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("may not delete work order-104-ack")
            .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42501"));
        HeldClaim held = claims.claimNext(c, "worker-1", "default", KIND, LEASE).orElseThrow();
        assertThatThrownBy(
                () ->
                    s.executeUpdate(
                        "DELETE FROM "
                            + db.schema()
                            + ".outbox WHERE work_id = '"
                            + held.workId()
                            + "'"))
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("may not delete work");
        // the settle's move files the row: allowed
        assertThat(claims.settle(c, held, Outcome.done("mail-1")).applied()).isTrue();
        HeldClaim next = claims.claimNext(c, "worker-1", "default", KIND, LEASE).orElseThrow();
        assertThat(claims.settle(c, next, Outcome.cancel("not needed")).applied()).isTrue();
      } finally {
        s.execute("RESET ROLE"); // a failed assertion must not hand the connection on as the role
      }
    }
    assertThat(db.queryString("SELECT string_agg(state, ',' ORDER BY state) FROM {schema}.work"))
        .isEqualTo("cancelled,done,ready");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(2);
  }

  @Test
  void theOperatorAndTheOwnerMayStillDeleteWork() throws Exception {
    try (Connection c = db.connection();
        Statement s = c.createStatement()) {
      s.execute("SET ROLE " + Role.OPERATOR.of(SchemaName.of(db.schema())));
      try {
        assertThat(
                s.executeUpdate(
                    "DELETE FROM " + db.schema() + ".outbox WHERE work_id = 'order-103-ack'"))
            .isEqualTo(1);
      } finally {
        s.execute("RESET ROLE");
      }
    }
    db.execute("DELETE FROM {schema}.outbox WHERE work_id = 'order-104-ack'");
    assertThat(db.queryString("SELECT string_agg(work_id, ',') FROM {schema}.outbox"))
        .isEqualTo("order-105-ack");
  }
}
