package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@RelayDatabaseTest
class LoopbackProxyTest {
  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private LoopbackProxy proxy;

  @BeforeEach
  void startProxy(TestDatabase db) throws Exception {
    proxy = LoopbackProxy.start(db.host(), db.port());
    db.execute("CREATE TABLE {schema}.t (v text)");
  }

  @AfterEach
  void closeProxy() {
    proxy.close();
  }

  @Test
  void relaysQueriesBothWays(TestDatabase db) throws SQLException {
    db.execute("INSERT INTO {schema}.t VALUES ('direct')");
    try (Connection connection = viaProxy(db, "")) {
      insert(connection, db, "proxied");
      assertThat(query(connection, "SELECT string_agg(v, ',' ORDER BY v) FROM " + table(db)))
          .isEqualTo("direct,proxied");
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.t")).isEqualTo(2);
    assertThat(proxy.connectionsAccepted()).isEqualTo(1);
  }

  @Test
  void dropAllBreaksOpenConnections(TestDatabase db) throws SQLException {
    try (Connection connection = viaProxy(db, "")) {
      assertThat(query(connection, "SELECT 'up'")).isEqualTo("up");
      proxy.dropAll();
      assertThatThrownBy(() -> query(connection, "SELECT 'still up?'"))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"));
    }
    try (Connection connection = viaProxy(db, "")) {
      assertThat(query(connection, "SELECT 'new connection'")).isEqualTo("new connection");
    }
  }

  @Test
  void stalledTrafficGetsNoAnswerUntilResumed(TestDatabase db) throws SQLException {
    try (Connection connection = viaProxy(db, "&socketTimeout=2")) {
      proxy.stall(true);
      assertThatThrownBy(() -> query(connection, "SELECT 1")).isInstanceOf(SQLException.class);
      proxy.stall(false);
    }
    try (Connection connection = viaProxy(db, "")) {
      assertThat(query(connection, "SELECT 'resumed'")).isEqualTo("resumed");
    }
  }

  @ParameterizedTest(name = "preferQueryMode={0}, earlier commits={1}")
  @CsvSource({"extended, 0", "extended, 7", "simple, 0"})
  void commitWhoseReplyIsLostStillCommits(String queryMode, int earlierCommits, TestDatabase db)
      throws Exception {
    try (Connection connection = viaProxy(db, "&preferQueryMode=" + queryMode)) {
      connection.setAutoCommit(false);
      for (int i = 0; i < earlierCommits; i++) {
        insert(connection, db, "earlier");
        connection.commit();
      }
      insert(connection, db, "reply lost");
      proxy.dropReplyAfterNextCommit();

      assertThatThrownBy(connection::commit)
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"));
      assertThat(proxy.awaitCommitReplyDropped(PATIENCE)).isTrue();
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.t WHERE v = 'reply lost'"))
        .as("committed at the server")
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.t WHERE v = 'earlier'"))
        .isEqualTo(earlierCommits);
  }

  @Test
  void armedDropWaitsForATransactionThatReallyCommits(TestDatabase db) throws Exception {
    try (Connection connection = viaProxy(db, "")) {
      connection.setAutoCommit(false);
      proxy.dropReplyAfterNextCommit();

      insert(connection, db, "rolled back");
      connection.rollback();
      assertThatThrownBy(() -> query(connection, "SELECT 1/0")).isInstanceOf(SQLException.class);
      try {
        connection.commit(); // the server answers ROLLBACK: nothing was committed
      } catch (SQLException e) {
        assertThat(e.getSQLState()).doesNotStartWith("08");
      }
      assertThat(proxy.awaitCommitReplyDropped(Duration.ZERO)).isFalse();

      insert(connection, db, "committed");
      assertThatThrownBy(connection::commit).isInstanceOf(SQLException.class);
      assertThat(proxy.awaitCommitReplyDropped(PATIENCE)).isTrue();
    }
    assertThat(db.queryString("SELECT string_agg(v, ',') FROM {schema}.t")).isEqualTo("committed");
  }

  @Test
  void latencyDelaysEachDirectionUntilTurnedOff(TestDatabase db) throws SQLException {
    try (Connection connection = viaProxy(db, "")) {
      assertThat(query(connection, "SELECT 'warm'")).isEqualTo("warm");
      proxy.latency(Duration.ofMillis(250));
      long start = System.nanoTime();
      assertThat(query(connection, "SELECT 'slow'")).isEqualTo("slow");
      // The query and its answer were each held one delay: a round trip takes two, at least.
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isGreaterThanOrEqualTo(Duration.ofMillis(500));
      proxy.latency(Duration.ZERO);
      assertThat(query(connection, "SELECT 'fast again'")).isEqualTo("fast again");
    }
    assertThatThrownBy(() -> proxy.latency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("latency");
  }

  @Test
  void listensOnAnotherLocalAddressWhenAsked(TestDatabase db) throws Exception {
    try (LoopbackProxy other = LoopbackProxy.start("127.0.0.2", db.host(), db.port());
        Connection connection =
            DriverManager.getConnection(db.jdbcUrlVia("127.0.0.2", other.port()))) {
      assertThat(other.host()).isEqualTo("127.0.0.2");
      assertThat(query(connection, "SELECT 'via 127.0.0.2'")).isEqualTo("via 127.0.0.2");
      assertThat(other.connectionsAccepted()).isEqualTo(1);
    }
    assertThat(proxy.host()).isEqualTo("127.0.0.1");
  }

  private Connection viaProxy(TestDatabase db, String extraParameters) throws SQLException {
    return DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()) + extraParameters);
  }

  private static String table(TestDatabase db) {
    return '"' + db.schema() + "\".t";
  }

  private static void insert(Connection connection, TestDatabase db, String value)
      throws SQLException {
    try (Statement statement = connection.createStatement()) {
      statement.executeUpdate("INSERT INTO " + table(db) + " VALUES ('" + value + "')");
    }
  }

  private static String query(Connection connection, String sql) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(sql)) {
      rows.next();
      return rows.getString(1);
    }
  }
}
