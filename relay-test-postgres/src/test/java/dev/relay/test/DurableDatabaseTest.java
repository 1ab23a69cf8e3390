package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.sql.SQLException;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class DurableDatabaseTest {

  @Test
  void defaultServerTradesDurabilityForSpeed(TestDatabase db) throws SQLException {
    assertThat(db.durable()).isFalse();
    assumeFalse(ExternalServer.configured(), "an external server has its own settings");
    assertThat(db.queryString("SHOW fsync")).isEqualTo("off");
    assertThat(db.queryString("SHOW synchronous_commit")).isEqualTo("off");
  }

  @Test
  @DurableDatabase
  void methodLevelAnnotationGivesADurableServer(TestDatabase db) throws SQLException {
    assertDurable(db);
  }

  @Nested
  @DurableDatabase
  class ClassLevel {
    @Test
    void testsOfAnAnnotatedClassGetADurableServer(TestDatabase db) throws SQLException {
      assertDurable(db);
    }
  }

  private static void assertDurable(TestDatabase db) throws SQLException {
    assertThat(db.durable()).isTrue();
    db.execute("CREATE TABLE {schema}.t (id int); INSERT INTO {schema}.t VALUES (1)");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.t")).isEqualTo(1);
    assumeFalse(ExternalServer.configured(), "an external server has its own settings");
    assertThat(db.queryString("SHOW fsync")).isEqualTo("on");
    assertThat(db.queryString("SHOW synchronous_commit")).isEqualTo("on");
    assertThat(db.queryString("SHOW full_page_writes")).isEqualTo("on");
  }
}
