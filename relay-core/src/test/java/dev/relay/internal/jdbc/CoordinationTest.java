package dev.relay.internal.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.InvalidConfigurationException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Pins the channel and the advisory-lock identities: processes of two Relay versions share a schema
 * during a rolling upgrade, so these exact values are a protocol between them. The numbers were
 * read from PostgreSQL with the statements of the release before {@link Coordination} existed
 * (hashtext of the key text as then concatenated in SQL). If this test fails, the change breaks
 * running installations that mix versions; do not update the numbers to make it pass.
 */
class CoordinationTest {
  private static final SchemaName RELAY = SchemaName.of("relay");

  @Nested
  class Names {
    @Test
    void theChannelIsRelayUnderscoreSchema() {
      assertThat(Coordination.channel(RELAY)).isEqualTo("relay_relay");
      assertThat(Coordination.channelLiteral(RELAY)).isEqualTo("'relay_relay'");
      assertThat(Coordination.checkedChannel(SchemaName.of("orders_2"), "schema"))
          .isEqualTo("relay_orders_2");
      assertThat(Coordination.listen("relay_relay")).isEqualTo("LISTEN relay_relay");
    }

    @Test
    void aChannelLongerThanPostgresAllowsIsRefusedNamingTheSetting() {
      String longest = "s".repeat(57);
      assertThat(Coordination.checkedChannel(SchemaName.of(longest), "schema")).hasSize(63);
      assertThatThrownBy(() -> Coordination.checkedChannel(SchemaName.of(longest + "s"), "schema"))
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("schema")
          .hasMessageContaining("has 64 bytes; PostgreSQL allows at most 63")
          .hasMessageContaining("at most 57 characters");
    }

    @Test
    void lockKeyTextsIncludeTheSchema() {
      assertThat(Coordination.inboxMessageKey(RELAY, "mailer", "order-7"))
          .isEqualTo("relay/mailer/order-7");
      assertThat(Coordination.migrationKey(RELAY)).isEqualTo("relay");
      assertThat(Coordination.maintenanceKey(RELAY)).isEqualTo("relay_maintenance:relay");
      assertThat(Coordination.INBOX_LOCK_CLASS).isEqualTo(1380273225); // "RELI"
      assertThat(Coordination.MIGRATION_LOCK_CLASS).isEqualTo(1380273229); // "RELM"
    }
  }

  /** The lock identities as PostgreSQL records them: (classid, objid, objsubid) in pg_locks. */
  @Nested
  @RelayDatabaseTest
  class LockIdentities {
    @Test
    void inboxMessageLock(TestDatabase db) throws SQLException {
      String key = Coordination.inboxMessageKey(RELAY, "mailer", "order-7");
      assertThat(heldWhileLocked(db, Coordination.LOCK_INBOX_MESSAGE, key))
          .containsExactly("1380273225/965772646/2");
      assertThat(heldWhileLocked(db, Coordination.TRY_LOCK_INBOX_MESSAGE, key))
          .containsExactly("1380273225/965772646/2");
    }

    @Test
    void migrationLock(TestDatabase db) throws SQLException {
      assertThat(heldWhileLocked(db, Coordination.LOCK_MIGRATION, Coordination.migrationKey(RELAY)))
          .containsExactly("1380273229/4177038864/2");
    }

    @Test
    void maintenanceLockIsSessionLevelAndUnlocks(TestDatabase db) throws SQLException {
      String key = Coordination.maintenanceKey(RELAY);
      try (Connection c = db.connection()) {
        assertThat(query(c, Coordination.TRY_LOCK_MAINTENANCE, key)).containsExactly("t");
        assertThat(advisoryLocks(c)).containsExactly("625022938/1748437298/1");
        assertThat(query(c, Coordination.UNLOCK_MAINTENANCE, key)).containsExactly("t");
        assertThat(advisoryLocks(c)).isEmpty();
      }
    }

    @Test
    void notifyReachesTheListenerOfTheChannel(TestDatabase db) throws SQLException {
      String channel = Coordination.checkedChannel(RELAY, "schema");
      try (Connection listener = db.connection();
          Connection sender = db.connection()) {
        try (Statement s = listener.createStatement()) {
          s.execute(Coordination.listen(channel));
        }
        assertThat(query(listener, "SELECT pg_listening_channels()")).containsExactly(channel);
        query(sender, Coordination.NOTIFY, channel);
        assertThat(query(listener, Coordination.PING)).containsExactly("1");
        org.postgresql.PGNotification[] notes =
            listener.unwrap(org.postgresql.PGConnection.class).getNotifications(10_000);
        assertThat(notes).extracting(org.postgresql.PGNotification::getName).contains(channel);
        try (Statement s = listener.createStatement()) {
          s.execute(Coordination.UNLISTEN_ALL);
        }
        assertThat(query(listener, "SELECT pg_listening_channels()")).isEmpty();
      }
    }

    /** Takes a transaction-level lock and lists the advisory locks this session then holds. */
    private List<String> heldWhileLocked(TestDatabase db, String lockSql, String key)
        throws SQLException {
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        try {
          query(c, lockSql, key);
          return advisoryLocks(c);
        } finally {
          c.rollback();
        }
      }
    }

    private List<String> advisoryLocks(Connection c) throws SQLException {
      return query(
          c,
          "SELECT classid::int8 || '/' || objid::int8 || '/' || objsubid FROM pg_locks"
              + " WHERE locktype = 'advisory' AND pid = pg_backend_pid() ORDER BY 1");
    }

    private List<String> query(Connection c, String sql, String... params) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < params.length; i++) {
          ps.setString(i + 1, params[i]);
        }
        List<String> rows = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            rows.add(rs.getString(1));
          }
        }
        return rows;
      }
    }
  }
}
