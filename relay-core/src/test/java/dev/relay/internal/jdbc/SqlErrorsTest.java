package dev.relay.internal.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.RelayException;
import dev.relay.RetryableException;
import dev.relay.internal.jdbc.SqlErrors.Handling;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each row of the SQLState table in docs/protocol.md ("SQLState classification"): the error raised
 * by real PostgreSQL where it can be provoked, and the classification of the others.
 */
@RelayDatabaseTest
class SqlErrorsTest {
  private static final Timeouts LONG =
      new Timeouts(Duration.ofSeconds(120), Duration.ofSeconds(120), Duration.ofSeconds(120));
  private TestDatabase db;
  private DataSource ds;

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    this.db = db;
    // A pool of its own: some tests end their sessions.
    this.ds = db.newDataSource("sql-errors", 4);
    db.execute(
        "CREATE TABLE {schema}.t (id int PRIMARY KEY, v int NOT NULL);"
            + " INSERT INTO {schema}.t VALUES (1, 0), (2, 0)");
  }

  private String t() {
    return db.schema() + ".t";
  }

  private static void exec(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private boolean waitingOnLock(int pid) throws SQLException {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  private boolean gone(int pid) throws SQLException {
    try (Connection c = db.connection();
        PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return !rs.next();
      }
    }
  }

  @Test
  void statementTimeoutIsRetryable57014() throws SQLException {
    Timeouts short_ =
        new Timeouts(Duration.ofMillis(200), Duration.ofSeconds(60), LONG.idleInTransaction());
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      short_,
                      "sleep",
                      tx -> {
                        exec(tx, "SELECT pg_sleep(30)");
                        return null;
                      }))
          .isInstanceOf(RetryableException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("57014");
    }
  }

  @Test
  void lockTimeoutIsRetryable55P03() throws SQLException {
    Timeouts shortLock =
        new Timeouts(Duration.ofSeconds(60), Duration.ofMillis(200), LONG.idleInTransaction());
    try (Connection holder = ds.getConnection();
        Connection c = ds.getConnection()) {
      holder.setAutoCommit(false);
      exec(holder, "SELECT * FROM " + t() + " WHERE id = 1 FOR UPDATE");
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      shortLock,
                      "lock",
                      tx -> {
                        exec(tx, "SELECT * FROM " + t() + " WHERE id = 1 FOR UPDATE");
                        return null;
                      }))
          .isInstanceOf(RetryableException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("55P03");
      holder.rollback();
    }
  }

  @Test
  void serializationFailureIsRetryable40001() throws SQLException {
    try (Connection other = ds.getConnection();
        Connection c = ds.getConnection()) {
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      LONG,
                      "update",
                      tx -> {
                        exec(tx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                        exec(tx, "SELECT v FROM " + t() + " WHERE id = 1"); // takes the snapshot
                        exec(other, "UPDATE " + t() + " SET v = v + 1 WHERE id = 1"); // commits
                        exec(tx, "UPDATE " + t() + " SET v = v + 1 WHERE id = 1");
                        return null;
                      }))
          .isInstanceOf(RetryableException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("40001");
    }
  }

  @Test
  void deadlockIsRetryable40P01() throws Exception {
    try (Connection b = ds.getConnection();
        Connection a = ds.getConnection()) {
      int aPid = pid(a);
      b.setAutoCommit(false);
      exec(b, "SELECT * FROM " + t() + " WHERE id = 2 FOR UPDATE");
      CompletableFuture<Void> aRun =
          CompletableFuture.runAsync(
              () ->
                  Tx.run(
                      a,
                      LONG,
                      "a",
                      tx -> {
                        exec(tx, "SELECT * FROM " + t() + " WHERE id = 1 FOR UPDATE");
                        exec(tx, "SELECT * FROM " + t() + " WHERE id = 2 FOR UPDATE");
                        return null;
                      }));
      await().atMost(Duration.ofSeconds(60)).until(() -> waitingOnLock(aPid));
      List<RelayException> errors = new ArrayList<>();
      try {
        exec(b, "SELECT * FROM " + t() + " WHERE id = 1 FOR UPDATE");
      } catch (SQLException e) {
        errors.add(SqlErrors.translate("b", e));
      }
      b.rollback(); // lets a finish if b was the victim
      try {
        aRun.get(60, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        errors.add((RelayException) e.getCause());
      }
      // PostgreSQL aborts one of the two, whichever detected the cycle.
      assertThat(errors)
          .singleElement()
          .satisfies(
              e -> {
                assertThat(e).isInstanceOf(RetryableException.class);
                assertThat(e.sqlState()).isEqualTo("40P01");
              });
    }
  }

  @Test
  void sessionEndedByAnAdministratorIsAConnectionLoss57P01() throws Exception {
    try (Connection c = ds.getConnection()) {
      int victim = pid(c);
      CompletableFuture<Void> run =
          CompletableFuture.runAsync(
              () ->
                  Tx.run(
                      c,
                      LONG,
                      "sleep",
                      tx -> {
                        exec(tx, "SELECT pg_sleep(60)");
                        return null;
                      }));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                try (Connection k = db.connection();
                    PreparedStatement ps =
                        k.prepareStatement(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                + " WHERE pid = ? AND wait_event = 'PgSleep'")) {
                  ps.setInt(1, victim);
                  try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getBoolean(1);
                  }
                }
              });
      assertThatThrownBy(() -> run.get(60, TimeUnit.SECONDS))
          .cause()
          .isInstanceOf(RetryableException.class)
          .satisfies(
              e ->
                  assertThat(SqlErrors.handling(((RelayException) e).sqlState()))
                      .isEqualTo(Handling.CONNECTION_LOST));
    }
  }

  @Test
  void idleInTransactionTimeoutIsAConnectionLoss() throws Exception {
    try (Connection c = ds.getConnection()) {
      int victim = pid(c);
      c.setAutoCommit(false);
      exec(c, "SET LOCAL idle_in_transaction_session_timeout = 100");
      exec(c, "SELECT 1");
      await().atMost(Duration.ofSeconds(60)).until(() -> gone(victim));
      SQLException e = null;
      try {
        exec(c, "SELECT 1");
      } catch (SQLException thrown) {
        e = thrown;
      }
      assertThat((Throwable) e).isNotNull();
      // 25P03 when the driver reads the server's last message, 08xxx when it finds the socket
      // closed first: a lost connection either way.
      assertThat(SqlErrors.handling(e.getSQLState())).isEqualTo(Handling.CONNECTION_LOST);
      RelayException commit = SqlErrors.translateCommit("commit", e);
      assertThat(commit).isInstanceOf(dev.relay.CommitOutcomeUnknownException.class);
      // A retry loop on RetryableException must not repeat a business change that may have landed.
      assertThat(commit).isNotInstanceOf(RetryableException.class);
      assertThat(commit.isRetryable()).isFalse();
    }
  }

  @Test
  void uniqueViolationIsNotRetryable23505() throws SQLException {
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      LONG,
                      "insert",
                      tx -> {
                        exec(tx, "INSERT INTO " + t() + " VALUES (1, 0)");
                        return null;
                      }))
          .isExactlyInstanceOf(RelayException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("23505");
    }
  }

  @Test
  void invalidTextIsNotRetryable22021() throws SQLException {
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      LONG,
                      "insert",
                      tx -> {
                        try (PreparedStatement ps = tx.prepareStatement("SELECT ?::text")) {
                          ps.setString(1, "bad\u0000text");
                          ps.executeQuery().close();
                        }
                        return null;
                      }))
          .isExactlyInstanceOf(RelayException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("22021");
    }
  }

  @Test
  void undefinedTableIsNotRetryable42P01() throws SQLException {
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      LONG,
                      "select",
                      tx -> {
                        exec(tx, "SELECT * FROM " + db.schema() + ".no_such_table");
                        return null;
                      }))
          .isExactlyInstanceOf(RelayException.class)
          .extracting(e -> ((RelayException) e).sqlState())
          .isEqualTo("42P01");
    }
  }

  /** The rows no test above provokes: too many connections, crash, startup, other class 08. */
  @ParameterizedTest
  @CsvSource({
    "53300, REPEAT",
    "57P02, CONNECTION_LOST",
    "57P03, CONNECTION_LOST",
    "08000, CONNECTION_LOST",
    "08001, CONNECTION_LOST",
    "08003, CONNECTION_LOST",
    "08006, CONNECTION_LOST",
    "23503, FAIL",
    "22P05, FAIL",
    "XX000, FAIL"
  })
  void classificationOfTheOtherRows(String state, Handling expected) {
    assertThat(SqlErrors.handling(state)).isEqualTo(expected);
    assertThat(SqlErrors.isRetryable(state)).isEqualTo(expected != Handling.FAIL);
  }

  @Test
  void noSqlStateIsNotRetryable() {
    assertThat(SqlErrors.handling(null)).isEqualTo(Handling.FAIL);
  }
}
