package dev.relay.internal.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class DeploymentTest {

  @Test
  void aServerWithoutStandbysHasNoFailoverRisk(TestDatabase db) throws Exception {
    try (Connection c = db.connection()) {
      assertThat(Deployment.failoverRisk(c)).isEmpty();
    }
  }

  @Test
  void aDirectConnectionIsASessionOfItsOwn(TestDatabase db) throws Exception {
    try (Connection c = DriverManager.getConnection(db.jdbcUrl())) {
      assertThat(Deployment.direct(c)).isTrue();
    }
  }

  @Test
  void asynchronousStandbysAreARisk() {
    assertThat(Deployment.failoverRisk("on", "", 2, 0, 0))
        .hasValueSatisfying(
            r ->
                assertThat(r)
                    .contains("2 standbys stream", "asynchronously", "synchronous_standby_names"));
  }

  @Test
  void commitsThatDoNotWaitForTheStandbyAreARisk() {
    assertThat(Deployment.failoverRisk("local", "*", 1, 1, 0))
        .hasValueSatisfying(r -> assertThat(r).contains("synchronous_commit is local"));
    assertThat(Deployment.failoverRisk("off", "*", 1, 1, 0)).isPresent();
  }

  @Test
  void namedStandbysNoneOfThemConnectedAsSynchronousAreARisk() {
    assertThat(Deployment.failoverRisk("on", "standby_a", 1, 0, 0))
        .hasValueSatisfying(r -> assertThat(r).contains("none of them synchronous"));
  }

  @Test
  void synchronousStandbysWithWaitingCommitsAreSafe() {
    assertThat(Deployment.failoverRisk("on", "*", 1, 1, 0)).isEmpty();
    assertThat(Deployment.failoverRisk("remote_apply", "FIRST 1 (a, b)", 2, 1, 0)).isEmpty();
    assertThat(Deployment.failoverRisk("remote_write", "ANY 1 (a, b)", 2, 2, 0)).isEmpty();
  }

  @Test
  void aRoleThatCannotSeeTheSyncStateIsNotWarnedFalsely() {
    assertThat(Deployment.failoverRisk("on", "*", 1, 0, 1)).isEmpty();
  }

  @Test
  void noStandbyNoRisk() {
    assertThat(Deployment.failoverRisk("off", "", 0, 0, 0)).isEmpty();
  }
}
