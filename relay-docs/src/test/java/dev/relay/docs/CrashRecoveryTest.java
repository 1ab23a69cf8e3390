package dev.relay.docs;

// docs:begin testing-durable-imports
import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.DurableDatabase;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;
// docs:end

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
