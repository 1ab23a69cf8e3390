package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.DurableDatabase;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;

/** The {@code @DurableDatabase} example of docs/testing.md, run as written. */
// docs:begin testing-durable
@RelayDatabaseTest
class CrashRecoveryTest {

  @Test
  @DurableDatabase
  void acknowledgedWorkSurvivesACrash(TestDatabase db) throws Exception {
    assertThat(db.queryString("SHOW fsync")).isEqualTo("on");
    // ... commit work, crash the server, check the work is there ...
  }
}
// docs:end
